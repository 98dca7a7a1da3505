// APNs Sandbox — end-to-end test support: a real in-process server per test.
import Crypto
import Foundation
import Server
import Support
import Synchronization
import Testing

/// A sandbox started in-process for one test, on free ports of 127.0.0.1.
struct TestServer: Sendable {
    let server: SandboxServer
    let configuration: SandboxConfiguration
    /// The temporary data directory (CA, server certificate).
    let dataDirectory: String
    let tlsPort: Int
    let httpPort: Int
    /// Warnings and errors the server logged (kept in memory, not printed).
    let logSink: LogSink
    /// A valid provider token (ES256 JWT) of the test team's key, for pushes to `com.example.app`.
    let providerToken: String
    /// `authorization: bearer <providerToken>`, as a curl `-H` value.
    var authorizationHeader: String { "authorization: bearer \(providerToken)" }
    private let stopped = StopFlag()

    /// Shuts the server down (graceful drain, then stops the loops) off the test's executor.
    /// Idempotent: `withServer` calls it again at the end. Returns the seconds it took.
    @discardableResult
    func shutdown() async -> Double {
        guard stopped.setOnce() else { return 0 }
        let start = monotonicSeconds()
        // `shutdown()` blocks while connections drain: keep it off the cooperative pool.
        await offload { [server] in server.shutdown() }
        return monotonicSeconds() - start
    }

    /// The generated CA clients trust.
    var caPath: String { server.tlsFiles.caCertificate }
    /// The server certificate chain the TLS listener presents.
    var certificateChainPath: String { server.tlsFiles.certificateChain }
    var httpBase: String { "http://127.0.0.1:\(httpPort)" }
    /// Uses `localhost`, a name of the generated certificate; curl needs `--resolve` (see `curlResolve`).
    var tlsBase: String { "https://localhost:\(tlsPort)" }
    /// Pins `localhost` to 127.0.0.1 for curl (the listeners are IPv4 only).
    var curlResolve: [String] { ["--resolve", "localhost:\(tlsPort):127.0.0.1"] }
}

/// True the first time only.
private final class StopFlag: Sendable {
    private let value = Locked(false)

    func setOnce() -> Bool {
        value.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
    }
}

/// Paths of the repository the tests run from.
enum TestPaths {
    /// `<package root>`, derived from this file's location (`Tests/ServerTests/Support/`).
    static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static var noALPNClient: String { packageRoot + "/Tests/Python/h2_no_alpn_client.py" }
    static var goawayProbe: String { packageRoot + "/Tests/Python/h2_goaway_probe.py" }
    static var goawayReason: String { packageRoot + "/Tests/Python/h2_goaway_reason.py" }
}

/// A 64-hex-character device token (unknown devices are registered on their first push).
let deviceToken = String(repeating: "ab", count: 32)
/// The app (bundle ID) the test team owns and pushes to.
let testTopic = "com.example.app"
let testTeamID = "E2ETEAM001"
let testKeyID = "E2EKEY0001"

/// Creates a fresh empty directory under the system temporary directory.
func makeTemporaryDirectory(_ prefix: String = "apns-sandbox-e2e") throws -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Starts a real `SandboxServer` (TLS and cleartext listeners on 127.0.0.1, port 0, two event
/// loops, a fresh data directory), runs `body`, then shuts the server down and removes the data.
///
/// `configure` may change anything (limits, timeouts) before the server is built; `logLevel` is what
/// `logSink` keeps (warnings and errors unless a test looks for debug lines).
func withServer<T>(
    logLevel: Logger.Level = .warning,
    configure: (inout SandboxConfiguration) -> Void = { _ in },
    beforeStart: (SandboxServer) -> Void = { _ in },
    _ body: (TestServer) async throws -> T
) async throws -> T {
    let dataDirectory = try makeTemporaryDirectory()
    var configuration = SandboxConfiguration()
    configuration.dataDirectory = dataDirectory
    // A team with a freshly generated signing key (Apple's .p8) and the app the tests push to.
    let keyFile = dataDirectory + "/AuthKey_\(testKeyID).p8"
    try ES256PrivateKey.generate().pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
    configuration.teams = [
        TeamConfiguration(teamID: testTeamID, keys: [.init(keyID: testKeyID, privateKeyFile: keyFile)], apps: [testTopic])
    ]
    // APNs allows one stream per connection until a valid provider token; these tests exercise the
    // transport with concurrent streams from the first request, so start with the full limit
    // (`providerStreamLimitIsRaisedAfterAuthentication` covers the APNs default).
    configuration.apns.streamsBeforeAuthentication = 0
    configuration.eventLoops = 2
    configuration.logLevel = .warning
    configuration.listeners = [
        .init(name: "tls", host: "127.0.0.1", port: 0, tls: true),
        .init(name: "cleartext", host: "127.0.0.1", port: 0, tls: false),
    ]
    configuration.limits.shutdownGraceSeconds = 2
    // `APNS_SANDBOX_TEST_STORAGE=memory swift test …` runs the end-to-end tests on the memory journal (tests that
    // restart a server on its files then fail, as they should); a test's own `configure` still decides.
    if ProcessInfo.processInfo.environment["APNS_SANDBOX_TEST_STORAGE"] == "memory" {
        configuration.storage.mode = .memory
        configuration.storage.memory = .init()
        configuration.storage.memory.notifications = 1_000_000
        configuration.storage.memory.events = 1_000_000
    }
    configure(&configuration)

    let token = try CredentialTools.providerToken(configuration: configuration, keyID: testKeyID)
    let sink = LogSink.capturing()
    let logger = Logger(label: "e2e", level: logLevel, sink: sink)
    let server: SandboxServer
    do {
        server = try SandboxServer(configuration: configuration, logger: logger)
        beforeStart(server)
        try server.start()
    } catch {
        try? FileManager.default.removeItem(atPath: dataDirectory)
        throw error
    }
    guard let tlsPort = server.port(tls: true), let httpPort = server.port(tls: false) else {
        await offload { server.shutdown() }
        try? FileManager.default.removeItem(atPath: dataDirectory)
        throw ProcessError("the listeners are not bound: \(server.listeners)")
    }
    let test = TestServer(
        server: server, configuration: configuration, dataDirectory: dataDirectory,
        tlsPort: tlsPort, httpPort: httpPort, logSink: sink, providerToken: token)

    func stop() async {
        await test.shutdown()
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }
    do {
        let result = try await body(test)
        await stop()
        return result
    } catch {
        await stop()
        throw error
    }
}

/// Runs blocking work (sockets, child processes) on its own thread, so that tests running in
/// parallel do not starve Swift's cooperative thread pool (two threads on a two-core machine).
func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

func offload<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.start()
    }
}

/// Seconds since an arbitrary point (monotonic).
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

// MARK: - JSON

/// Parses a JSON object, or nil.
func jsonObject(_ bytes: some Collection<UInt8>) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
}

func jsonObject(_ text: String) -> [String: Any]? {
    jsonObject(Array(text.utf8))
}

/// `error.code` of the sandbox's JSON error shape `{"error":{"code":…,"message":…}}`.
func errorCode(_ bytes: some Collection<UInt8>) -> String? {
    (jsonObject(bytes)?["error"] as? [String: Any])?["code"] as? String
}

/// Whether `text` is a lowercase canonical UUID (8-4-4-4-12 hex digits).
func isLowercaseUUID(_ text: String) -> Bool {
    text.wholeMatch(of: #/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/#) != nil
}
