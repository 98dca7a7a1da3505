// APNs Sandbox — end-to-end test support for the provider API: pushes over h2c, h2 over TLS and
// HTTP/1.1 with curl, several pushes on one connection, extra teams and keys, exact APNs answers.
import APNsProtocol
import Crypto
import Foundation
import Sandbox
import Server
import TestProcessSupport
import Testing

// MARK: - Transports

/// How a test talks to the provider endpoint.
enum ProviderTransport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// HTTP/2 cleartext with prior knowledge (`curl --http2-prior-knowledge`).
    case h2c
    /// HTTP/2 over TLS with ALPN (`curl --http2 --cacert …`).
    case h2TLS = "h2-tls"
    /// HTTP/1.1 cleartext (`curl --http1.1`).
    case http1 = "http1.1"
    /// HTTP/1.1 over TLS (`curl --http1.1 --cacert …`); for certificate tests, not in `allCases`.
    case http1TLS = "http1.1-tls"

    /// The three transports of the provider matrix.
    static var allCases: [ProviderTransport] { [.h2c, .h2TLS, .http1] }
    /// The transports that can carry a client certificate.
    static var tlsCases: [ProviderTransport] { [.h2TLS, .http1TLS] }

    var testDescription: String { rawValue }
    var isTLS: Bool { self == .h2TLS || self == .http1TLS }
    /// The status-line prefix curl prints for this transport.
    var statusLinePrefix: String { self == .http1 || self == .http1TLS ? "HTTP/1.1 " : "HTTP/2 " }

    var curlFlags: [String] {
        switch self {
        case .h2c: ["--http2-prior-knowledge"]
        case .h2TLS: ["--http2"]
        case .http1, .http1TLS: ["--http1.1"]
        }
    }
}

/// The host a push addresses: it selects the APNs environment.
enum PushHost: String, Sendable {
    /// `localhost` (TLS) or `127.0.0.1` (cleartext): the listener's default, development.
    case local
    /// `api.push.apple.com`: production.
    case production = "api.push.apple.com"
    /// `api.sandbox.push.apple.com`: development.
    case sandbox = "api.sandbox.push.apple.com"

    var environment: APNsEnvironment { self == .production ? .production : .development }
}

// MARK: - Requests and replies

/// One request to the provider endpoint.
struct PushSpec: Sendable {
    var method = "POST"
    var path = "/3/device/\(deviceToken)"
    /// Sent in this order, duplicates included.
    var headers: [(name: String, value: String)] = []
    /// nil: no body at all (e.g. GET); empty: `content-length: 0`.
    var body: [UInt8]? = Array(alertPayload.utf8)
    var host: PushHost = .local

    /// A push with the usual headers: an upper-case `apns-id` (so its lower-case echo is checked),
    /// `authorization` (when given), `apns-topic` (when given), then `extra`.
    static func push(
        token: String = deviceToken, authorization: String?, topic: String? = testTopic,
        extra: [(String, String)] = [], body: String? = alertPayload, host: PushHost = .local,
        apnsID: String? = UUID().uuidString
    ) -> PushSpec {
        var headers: [(name: String, value: String)] = []
        if let apnsID { headers.append(("apns-id", apnsID)) }
        if let authorization { headers.append(("authorization", "bearer \(authorization)")) }
        if let topic { headers.append(("apns-topic", topic)) }
        for (name, value) in extra { headers.append((name, value)) }
        return PushSpec(path: "/3/device/\(token)", headers: headers, body: body.map { Array($0.utf8) }, host: host)
    }

    /// The `apns-id` the server must echo: the client's, lowercased, when exactly one valid one was sent.
    var expectedEcho: String? {
        let ids = headers.filter { $0.name.lowercased() == "apns-id" }.map(\.value)
        guard ids.count == 1, let id = ids.first,
              id.wholeMatch(of: #/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/#) != nil
        else { return nil }
        return id.lowercased()
    }

    /// The client's `apns-id` as sent, if any.
    var sentAPNsID: String? {
        headers.first { $0.name.lowercased() == "apns-id" }?.value
    }
}

let alertPayload = #"{"aps":{"alert":"Hello"}}"#

/// `{"aps":{"alert":"xxx…"}}` of exactly `bytes` bytes (at least 20).
func payload(ofSize bytes: Int) -> String {
    #"{"aps":{"alert":""# + String(repeating: "x", count: bytes - 20) + #""}}"#
}

/// A response as the client saw it.
struct PushReply: Sendable, CustomStringConvertible {
    var statusLine: String
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }

    func headerCount(_ name: String) -> Int {
        headers.filter { $0.name == name.lowercased() }.count
    }

    var description: String {
        "\(statusLine) \(headers.map { "\($0.name): \($0.value)" }.joined(separator: "; ")) body=\(bodyText)"
    }
}

// MARK: - A server with extra teams and keys

/// Key IDs, teams and apps of `withProviderServer`.
enum Fixture {
    /// A second team-scoped key of the test team (`testKeyID` is the first).
    static let secondTeamKeyID = "E2EKEY0002"
    /// A key of the test team scoped to `testTopic` only.
    static let scopedKeyID = "E2ESCOPED1"
    /// A key of the test team valid in development only.
    static let developmentKeyID = "E2EDEVKEY1"
    /// A key of the test team valid in production only.
    static let productionKeyID = "E2EPRODKY1"
    /// Another team, its key and its app.
    static let otherTeamID = "E2ETEAM002"
    static let otherTeamKeyID = "E2EKEYB001"
    static let otherTeamTopic = "com.other.app"
    /// A second app of the test team.
    static let secondTopic = "com.example.second"

    /// A device token of 32 bytes built from one repeated byte (hex, two digits).
    static func token(_ byte: String) -> String { String(repeating: byte, count: 32) }
}

/// A `TestServer` with the fixture's extra keys and teams.
struct ProviderServer: Sendable {
    let test: TestServer
    let keyDirectory: String

    var registry: DeviceRegistry { test.server.registry }

    /// A provider token signed with a configured key (default: the test team's key), issued now
    /// or at `issuedAt`.
    func token(_ keyID: String = testKeyID, issuedAt: Int64? = nil) throws -> String {
        try CredentialTools.providerToken(configuration: test.configuration, keyID: keyID, issuedAt: issuedAt)
    }

    /// Seconds since the epoch.
    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// The URL base and curl arguments that reach `host` over `transport`.
    func target(_ transport: ProviderTransport, host: PushHost) -> (base: String, args: [String]) {
        let port = transport.isTLS ? test.tlsPort : test.httpPort
        let scheme = transport.isTLS ? "https" : "http"
        var args = transport.curlFlags
        if transport.isTLS { args += ["--cacert", test.caPath] }
        switch host {
        case .local:
            if transport.isTLS {
                args += ["--resolve", "localhost:\(port):127.0.0.1"]
                return ("https://localhost:\(port)", args)
            }
            return ("http://127.0.0.1:\(port)", args)
        case .production, .sandbox:
            args += ["--resolve", "\(host.rawValue):\(port):127.0.0.1"]
            return ("\(scheme)://\(host.rawValue):\(port)", args)
        }
    }

    /// One push on its own connection, with curl.
    /// - Parameter curlArguments: extra arguments (e.g. `--cert`, `--key`).
    func push(_ spec: PushSpec, over transport: ProviderTransport, curlArguments: [String] = []) async throws -> PushReply {
        let replies = try await curlPushes([spec], over: transport, curlArguments: curlArguments)
        return replies[0]
    }

    /// Several pushes, one after the other, on ONE connection.
    ///
    /// curl for h2 over TLS and HTTP/1.1 (`--next`); for h2c a Python `h2` client, since
    /// curl 7.88 fails to reuse a prior-knowledge h2c connection ("Error in the HTTP2 framing layer",
    /// also against nghttpd).
    func pushOnOneConnection(
        _ specs: [PushSpec], over transport: ProviderTransport, curlArguments: [String] = []
    ) async throws -> [PushReply] {
        if transport == .h2c {
            return try await h2Sequence(specs, tls: false).replies
        }
        return try await curlPushes(specs, over: transport, curlArguments: curlArguments)
    }

    /// Several pushes on ONE connection, strictly one after the other: `between(i)` runs after the reply to push
    /// `i - 1` has arrived and before push `i` is sent (e.g. to move the virtual clock between two pushes, where a
    /// `spacing` of wall-clock time says nothing of when the server handled each one). h2c and h2 over TLS with
    /// Python's `h2`, HTTP/1.1 over a raw socket.
    func pushOnOneConnection(
        _ specs: [PushSpec], over transport: ProviderTransport, between: @escaping (Int) async throws -> Void
    ) async throws -> [PushReply] {
        switch transport {
        case .h2c, .h2TLS: try await h2Sequence(specs, tls: transport.isTLS, between: between).replies
        case .http1: try await http1Sequence(specs, between: between)
        case .http1TLS: throw ProcessError("no gated sequence over HTTP/1.1 with TLS")
        }
    }

    /// `specs` over one cleartext HTTP/1.1 connection (a raw socket), each sent once the previous reply is in.
    private func http1Sequence(_ specs: [PushSpec], between: (Int) async throws -> Void) async throws -> [PushReply] {
        let socket = try await offload { [port = test.httpPort] in try RawSocket(port: port) }
        defer { socket.close() }
        var replies: [PushReply] = []
        for (index, spec) in specs.enumerated() {
            if index > 0 { try await between(index) }
            let authority = spec.host == .local ? "127.0.0.1:\(test.httpPort)" : "\(spec.host.rawValue):\(test.httpPort)"
            var head = "\(spec.method) \(spec.path) HTTP/1.1\r\nhost: \(authority)\r\n"
            for (name, value) in spec.headers { head += "\(name): \(value)\r\n" }
            if let body = spec.body { head += "content-length: \(body.count)\r\n" }
            let request = Array((head + "\r\n").utf8) + (spec.body ?? [])
            let read = try await offload { () throws -> ReadResult in
                try socket.send(request)
                return socket.readResponses(1, timeout: TestTime.seconds(10))
            }
            guard let response = read.responses.first else {
                throw ProcessError("no response to request \(index) (closed: \(read.closed)): \(read.text)")
            }
            replies.append(PushReply(
                statusLine: response.statusLine, status: response.status, headers: response.headers, body: response.body))
        }
        return replies
    }

    private func curlPushes(
        _ specs: [PushSpec], over transport: ProviderTransport, curlArguments: [String]
    ) async throws -> [PushReply] {
        let directory = try makeTemporaryDirectory("apns-provider-curl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var args: [String] = []
        for (index, spec) in specs.enumerated() {
            if index > 0 { args.append("--next") }
            let (base, targetArgs) = target(transport, host: spec.host)
            args += ["-sS", "--max-time", "10"] + targetArgs + curlArguments
            args += ["-D", "\(directory)/head\(index)", "-o", "\(directory)/body\(index)", "-w", "%{num_connects}\\n"]
            if spec.method != "GET" || spec.body != nil { args += ["-X", spec.method] }
            for (name, value) in spec.headers {
                // `name;` sends an empty value (`name:` would remove the header).
                args += ["-H", value.isEmpty ? "\(name);" : "\(name): \(value)"]
            }
            if let body = spec.body {
                let file = "\(directory)/request\(index)"
                _ = FileManager.default.createFile(atPath: file, contents: Data(body))
                args += ["--data-binary", "@\(file)"]
            }
            args.append(base + spec.path)
        }
        let output = try await run("/usr/bin/curl", args: args, timeout: 30)
        guard output.status == 0 else { throw ProcessError("curl failed: \(output)") }
        let connects = output.stdoutText.split(separator: "\n").compactMap { Int($0) }
        if specs.count > 1 {
            guard connects.reduce(0, +) == 1 else {
                throw ProcessError("curl used \(connects) connections, not one: \(output)")
            }
        }
        var replies: [PushReply] = []
        for index in specs.indices {
            let head = FileManager.default.contents(atPath: "\(directory)/head\(index)") ?? Data()
            let body = FileManager.default.contents(atPath: "\(directory)/body\(index)") ?? Data()
            guard let response = CurlResponse(head + body) else {
                throw ProcessError("unreadable response \(index): \(String(decoding: head, as: UTF8.self))")
            }
            replies.append(PushReply(
                statusLine: response.statusLine, status: response.status, headers: response.headers,
                body: Array(response.body)))
        }
        return replies
    }

    /// What the Python h2 client saw on its one connection.
    struct H2Sequence: Sendable {
        var replies: [PushReply]
        /// SETTINGS_MAX_CONCURRENT_STREAMS of the server's first SETTINGS (nil: not sent).
        var initialMaxConcurrentStreams: Int?
        /// The value in force when each response had ended.
        var maxConcurrentStreamsAfter: [Int?]
    }

    /// Pushes `specs` one after the other on one HTTP/2 connection with Python's `h2`
    /// (cleartext prior knowledge, or TLS with ALPN h2 and optionally a client certificate).
    /// With `between`, push `i` waits until `between(i)` has run (after the reply to push `i - 1`).
    func h2Sequence(
        _ specs: [PushSpec], tls: Bool, certificate: (cert: String, key: String)? = nil,
        between: ((Int) async throws -> Void)? = nil
    ) async throws -> H2Sequence {
        let port = tls ? test.tlsPort : test.httpPort
        var requests: [[String: Any]] = []
        for spec in specs {
            let authority: String = switch spec.host {
            case .local: tls ? "localhost:\(port)" : "127.0.0.1:\(port)"
            case .production, .sandbox: "\(spec.host.rawValue):\(port)"
            }
            var request: [String: Any] = [
                "method": spec.method, "path": spec.path, "authority": authority,
                "headers": spec.headers.map { [$0.name, $0.value] },
            ]
            if let body = spec.body { request["body"] = Data(body).base64EncodedString() }
            requests.append(request)
        }
        var input: [String: Any] = ["port": port, "tls": tls, "cafile": test.caPath, "requests": requests]
        if let certificate {
            input["cert"] = certificate.cert
            input["key"] = certificate.key
        }
        var gate: String?
        if between != nil {
            gate = try makeTemporaryDirectory("apns-provider-gate")
            input["gate"] = gate
        }
        defer { if let gate { try? FileManager.default.removeItem(atPath: gate) } }
        let stdin = try JSONSerialization.data(withJSONObject: input)
        let output: ProcessOutput
        if let gate, let between {
            // The script creates ready-<i> once the reply to push i - 1 is in and sends push i when go-<i> exists.
            let child = try ChildProcess("python3", arguments: ["-c", h2SequenceScript], stdin: stdin)
            defer { child.send(signal: SIGKILL) }
            gates: for index in 1..<max(1, specs.count) {
                while !FileManager.default.fileExists(atPath: "\(gate)/ready-\(index)") {
                    if child.wait(timeout: 0) != nil { break gates }
                    try await Task.sleep(nanoseconds: 5_000_000)
                }
                try await between(index)
                _ = FileManager.default.createFile(atPath: "\(gate)/go-\(index)", contents: nil)
            }
            output = await offload { child.finish(timeout: 30) }
        } else {
            output = try await run("python3", args: ["-c", h2SequenceScript], stdin: stdin, timeout: 30)
        }
        guard output.status == 0, let result = jsonObject(output.stdout),
              let responses = result["responses"] as? [[String: Any]]
        else { throw ProcessError("python h2 client failed: \(output)") }
        var sequence = H2Sequence(
            replies: [], initialMaxConcurrentStreams: result["initialMaxConcurrentStreams"] as? Int,
            maxConcurrentStreamsAfter: [])
        for response in responses {
            let status = response["status"] as? Int ?? 0
            let headers = (response["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) }
            let body = Data(base64Encoded: response["body"] as? String ?? "") ?? Data()
            sequence.replies.append(PushReply(statusLine: "HTTP/2 \(status)", status: status, headers: headers, body: Array(body)))
            sequence.maxConcurrentStreamsAfter.append(response["maxConcurrentStreams"] as? Int)
        }
        return sequence
    }

    // MARK: The virtual clock (`clock.virtual`, e.g. `ClockSettings(virtual: true, frozen: true)`)

    /// The sandbox clock's wall time, in seconds since the epoch (`GET /api/v1/clock`).
    func clockSeconds() async throws -> Int64 {
        let (status, json) = try await apiRequest("GET", "\(test.httpBase)/api/v1/clock")
        guard status == 200, let milliseconds = (json?["nowMilliseconds"] as? NSNumber)?.int64Value else {
            throw ProcessError("GET /api/v1/clock: \(status) \(String(describing: json))")
        }
        return milliseconds / 1000
    }

    /// Moves the virtual clock `milliseconds` forward (`POST /api/v1/clock/advance`).
    func advanceClock(milliseconds: Int64) async throws {
        let (status, json) = try await apiRequest(
            "POST", "\(test.httpBase)/api/v1/clock/advance", #"{"milliseconds":\#(milliseconds)}"#)
        guard status == 200 else { throw ProcessError("advance: \(status) \(String(describing: json))") }
    }

    // MARK: The push log

    /// `GET /api/v1/pushes?limit=…` (cleartext HTTP/1.1): the entries, newest first, and the counts.
    func pushLog(limit: Int = 1000) async throws -> (accepted: Int, rejected: Int, pushes: [[String: Any]]) {
        let output = try await curl(["--http1.1", "\(test.httpBase)/api/v1/pushes?limit=\(limit)"])
        guard output.status == 0, let listing = jsonObject(output.stdout),
              let pushes = listing["pushes"] as? [[String: Any]]
        else { throw ProcessError("push log: \(output)") }
        return (listing["accepted"] as? Int ?? -1, listing["rejected"] as? Int ?? -1, pushes)
    }

    /// The push-log entry of `apnsID`.
    func logEntry(apnsID: String) async throws -> [String: Any]? {
        try await pushLog().pushes.first { $0["apnsId"] as? String == apnsID }
    }
}

/// Starts a server (`withServer`) whose configuration also has:
/// - in the test team: a second team key, a key scoped to `testTopic`, a development-only key, a
///   production-only key, and a second app `Fixture.secondTopic`;
/// - another team `Fixture.otherTeamID` with its own key and app `Fixture.otherTeamTopic`;
/// - APNs' default of one stream before authentication.
///
/// `configure` runs last. `queue` is `.bulk` for the reason matrix's hundreds of cases: they wait
/// behind every other test for a server slot, so a suite of a few cases is not queued behind them
/// past its time limit (a slot's wait counts towards the time limit of the test that waits).
func withProviderServer<T>(
    queue: ProviderServerSlots.Queue = .normal,
    configure: (inout SandboxConfiguration) -> Void = { _ in },
    _ body: (ProviderServer) async throws -> T
) async throws -> T {
    // The matrix has ~250 cases; all servers at once exhaust file descriptors (and Foundation's
    // `Process.run` crashes when the test process has over ~1000 open descriptors).
    await ProviderServerSlots.shared.acquire(queue)
    do {
        let result = try await withProviderServerUnlimited(configure: configure, body)
        await ProviderServerSlots.shared.release()
        return result
    } catch {
        await ProviderServerSlots.shared.release()
        throw error
    }
}

/// Bounds how many `withProviderServer` servers run at once. A freed slot goes to the longest
/// waiter of the `.normal` queue, and to the `.bulk` queue only when no normal test waits.
actor ProviderServerSlots {
    enum Queue: Sendable { case normal, bulk }

    static let shared = ProviderServerSlots(limit: 6)
    private var available: Int
    private var normal: [CheckedContinuation<Void, Never>] = []
    private var bulk: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) {
        available = limit
    }

    func acquire(_ queue: Queue) async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { waiter in
            switch queue {
            case .normal: normal.append(waiter)
            case .bulk: bulk.append(waiter)
            }
        }
    }

    func release() {
        if !normal.isEmpty {
            normal.removeFirst().resume()
        } else if !bulk.isEmpty {
            bulk.removeFirst().resume()
        } else {
            available += 1
        }
    }
}

private func withProviderServerUnlimited<T>(
    configure: (inout SandboxConfiguration) -> Void,
    _ body: (ProviderServer) async throws -> T
) async throws -> T {
    let keyDirectory = try makeTemporaryDirectory("apns-provider-keys")
    defer { try? FileManager.default.removeItem(atPath: keyDirectory) }
    func keyFile(_ keyID: String) throws -> String {
        let path = "\(keyDirectory)/AuthKey_\(keyID).p8"
        try ES256PrivateKey.generate().pkcs8PEM.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
    let second = try keyFile(Fixture.secondTeamKeyID)
    let scoped = try keyFile(Fixture.scopedKeyID)
    let development = try keyFile(Fixture.developmentKeyID)
    let production = try keyFile(Fixture.productionKeyID)
    let other = try keyFile(Fixture.otherTeamKeyID)
    return try await withServer(configure: { configuration in
        configuration.apns.streamsBeforeAuthentication = 1
        configuration.teams[0].keys += [
            .init(keyID: Fixture.secondTeamKeyID, privateKeyFile: second),
            .init(keyID: Fixture.scopedKeyID, privateKeyFile: scoped, scope: .topics, topics: [testTopic]),
            .init(keyID: Fixture.developmentKeyID, privateKeyFile: development, environment: .development),
            .init(keyID: Fixture.productionKeyID, privateKeyFile: production, environment: .production),
        ]
        configuration.teams[0].apps.append(Fixture.secondTopic)
        configuration.teams.append(TeamConfiguration(
            teamID: Fixture.otherTeamID, keys: [.init(keyID: Fixture.otherTeamKeyID, privateKeyFile: other)],
            apps: [Fixture.otherTeamTopic]))
        configure(&configuration)
    }) { test in
        try await body(ProviderServer(test: test, keyDirectory: keyDirectory))
    }
}

// MARK: - Expectations

/// What a push must get.
enum PushOutcome: Sendable, CustomStringConvertible {
    case accepted
    /// `status`, `{"reason":reason}` (plus `timestamp` for 410).
    case rejected(Int, String, timestamp: Int64? = nil)

    var description: String {
        switch self {
        case .accepted: "200"
        case .rejected(let status, let reason, let timestamp): "\(status) \(reason)\(timestamp.map { " @\($0)" } ?? "")"
        }
    }
}

/// Checks everything APNs promises about a response: status, exact body, `content-type`,
/// `apns-id` (a lowercase UUID, the client's echo when it sent a valid one), `apns-unique-id`
/// (development only), `allow: POST` on 405.
func expectReply(
    _ reply: PushReply, _ outcome: PushOutcome, for spec: PushSpec, transport: ProviderTransport? = nil,
    environment: APNsEnvironment? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    let context = "\(outcome) expected, got \(reply)"
    if let transport {
        #expect(reply.statusLine.hasPrefix(transport.statusLinePrefix), "\(context)", sourceLocation: sourceLocation)
    }
    switch outcome {
    case .accepted:
        #expect(reply.status == 200, "\(context)", sourceLocation: sourceLocation)
        #expect(reply.body.isEmpty, "a 200 has an empty body: \(context)", sourceLocation: sourceLocation)
    case .rejected(let status, let reason, let timestamp):
        #expect(reply.status == status, "\(context)", sourceLocation: sourceLocation)
        let body = timestamp.map { #"{"reason":"\#(reason)","timestamp":\#($0)}"# } ?? #"{"reason":"\#(reason)"}"#
        #expect(reply.bodyText == body, "exact body: \(context)", sourceLocation: sourceLocation)
        #expect(reply.header("content-type") == "application/json", "\(context)", sourceLocation: sourceLocation)
        if status == 405 {
            #expect(reply.header("allow") == "POST", "405 carries allow: POST: \(context)", sourceLocation: sourceLocation)
        }
    }
    #expect(reply.headerCount("apns-id") == 1, "one apns-id: \(context)", sourceLocation: sourceLocation)
    let apnsID = reply.header("apns-id") ?? ""
    #expect(isLowercaseUUID(apnsID), "apns-id \(apnsID) is not a lowercase UUID: \(context)", sourceLocation: sourceLocation)
    if let echo = spec.expectedEcho {
        #expect(apnsID == echo, "the client's apns-id is echoed lowercased: \(context)", sourceLocation: sourceLocation)
    } else if let sent = spec.sentAPNsID {
        #expect(apnsID != sent, "an invalid apns-id is replaced: \(context)", sourceLocation: sourceLocation)
    }
    if (environment ?? spec.host.environment) == .development {
        let uniqueID = reply.header("apns-unique-id") ?? ""
        #expect(isLowercaseUUID(uniqueID), "apns-unique-id in development: \(context)", sourceLocation: sourceLocation)
    } else {
        #expect(reply.header("apns-unique-id") == nil, "no apns-unique-id in production: \(context)", sourceLocation: sourceLocation)
    }
}

// MARK: - Python h2 client

/// Reads `{"port", "tls", "cafile", "cert"?, "key"?, "requests": [{method, path, authority,
/// headers: [[n, v]], body?: base64, delay}]}` on stdin, sends the requests one after the other
/// on one connection and prints `{"initialMaxConcurrentStreams", "responses": [{status,
/// headers, body: base64, maxConcurrentStreams}]}`.
private let h2SequenceScript = #"""
import base64, json, os, socket, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.settings

spec = json.load(sys.stdin)
sock = socket.create_connection(("127.0.0.1", spec["port"]), timeout=10)
if spec["tls"]:
    ctx = ssl.create_default_context(cafile=spec["cafile"])
    ctx.set_alpn_protocols(["h2"])
    if spec.get("cert"):
        ctx.load_cert_chain(spec["cert"], spec["key"])
    sock = ctx.wrap_socket(sock, server_hostname=spec["requests"][0]["authority"].rsplit(":", 1)[0] if spec["requests"] else "localhost")
config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                   validate_outbound_headers=False, normalize_outbound_headers=False)
conn = h2.connection.H2Connection(config=config)
conn.initiate_connection()
sock.sendall(conn.data_to_send())
state = {"settings": [], "streams": {}}

def handle(event):
    if isinstance(event, h2.events.RemoteSettingsChanged):
        changed = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
        state["settings"].append(changed.new_value if changed else None)
    elif isinstance(event, h2.events.ResponseReceived):
        stream = state["streams"].setdefault(event.stream_id, {"body": b""})
        stream["headers"] = [[n, v] for n, v in event.headers]
    elif isinstance(event, h2.events.DataReceived):
        stream = state["streams"].setdefault(event.stream_id, {"body": b""})
        stream["body"] += event.data
        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
    elif isinstance(event, h2.events.StreamEnded):
        state["streams"].setdefault(event.stream_id, {"body": b""})["ended"] = True
    elif isinstance(event, h2.events.StreamReset):
        state["streams"].setdefault(event.stream_id, {"body": b""})["reset"] = event.error_code
    elif isinstance(event, h2.events.PingAckReceived):
        state["pong"] = True
    elif isinstance(event, h2.events.ConnectionTerminated):
        raise SystemExit("connection terminated: %r" % event)

def pump(done):
    while not done():
        data = sock.recv(65536)
        if not data:
            raise SystemExit("connection closed")
        for event in conn.receive_data(data):
            handle(event)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)

pump(lambda: len(state["settings"]) >= 1)
initial = state["settings"][0]
responses = []
for index, request in enumerate(spec["requests"]):
    if spec.get("gate") and index > 0:
        open("%s/ready-%d" % (spec["gate"], index), "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists("%s/go-%d" % (spec["gate"], index)):
            if time.monotonic() > deadline:
                raise SystemExit("the gate before request %d never opened" % index)
            time.sleep(0.005)
    sid = conn.get_next_available_stream_id()
    headers = [(":method", request["method"]), (":scheme", "https" if spec["tls"] else "http"),
               (":path", request["path"]), (":authority", request["authority"])]
    headers += [(n, v) for n, v in request["headers"]]
    body = base64.b64decode(request["body"]) if "body" in request else None
    if body is not None:
        headers.append(("content-length", str(len(body))))
    conn.send_headers(sid, headers, end_stream=not body)
    if body:
        conn.send_data(sid, body, end_stream=True)
    sock.sendall(conn.data_to_send())
    pump(lambda: state["streams"].get(sid, {}).get("ended") or "reset" in state["streams"].get(sid, {}))
    # A PING's ACK comes after every frame the server queued before it (e.g. a raised limit).
    state["pong"] = False
    conn.ping(b"settled!")
    sock.sendall(conn.data_to_send())
    pump(lambda: state["pong"])
    stream = state["streams"][sid]
    if "reset" in stream:
        raise SystemExit("stream %d reset: %r" % (sid, stream["reset"]))
    status = 0
    regular = []
    for name, value in stream.get("headers", []):
        if name == ":status":
            status = int(value)
        elif not name.startswith(":"):
            regular.append([name, value])
    responses.append({"status": status, "headers": regular, "body": base64.b64encode(stream["body"]).decode(),
                      "maxConcurrentStreams": conn.remote_settings.max_concurrent_streams})
conn.close_connection()
sock.sendall(conn.data_to_send())
sock.close()
print(json.dumps({"initialMaxConcurrentStreams": initial, "responses": responses}))
"""#
