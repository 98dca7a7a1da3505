// APNs Sandbox — running extension instances in tests: pushes, results, fixtures, temporary data.
import APNsProtocol
import Crypto
import Dispatch
import Foundation
import Sandbox
import Support
import Synchronization
import Testing

@testable import ExtensionRuntime

/// A fresh directory under the system temp dir, removed when the value is deinitialized.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        let base = NSTemporaryDirectory() + "extension-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Paths of the test extension programs in `Tests/Fixtures/extensions`.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures/extensions").path

    static func path(_ name: String) -> String { directory + "/" + name }

    /// An exec configuration running `Tests/Fixtures/extensions/nse.py <mode>`.
    static func python(_ mode: String, budgetMs: Int = 5_000, graceMs: Int = 500, memoryLimitMB: Int? = nil,
                       extra: [String] = []) -> String {
        let arguments = ([path("nse.py"), mode] + extra).map { "\"\($0)\"" }.joined(separator: ",")
        let memory = memoryLimitMB.map { ",\"memoryLimitMB\":\($0)" } ?? ""
        return #"{"kind":"exec","path":"python3","arguments":[\#(arguments)],"budgetMs":\#(budgetMs),"graceMs":\#(graceMs)\#(memory)}"#
    }

    /// An exec configuration running a shell fixture.
    static func shell(_ name: String, budgetMs: Int = 5_000, graceMs: Int = 500) -> String {
        #"{"kind":"exec","path":"\#(path(name))","budgetMs":\#(budgetMs),"graceMs":\#(graceMs)}"#
    }

    /// A 1×1 transparent PNG.
    static let png: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
        0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
        0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
        0x42, 0x60, 0x82,
    ]
}

/// One push to run through the runtime.
struct TestPush {
    var payload = #"{"aps":{"alert":{"title":"Secret","body":"Encrypted"},"mutable-content":1},"k":1}"#
    var extensionJSON: String
    var headers: [HeaderField] = []
    var bundleID = "com.example.app"
    var token = String(repeating: "ab", count: 32)
    var keys: [String: String] = [:]
    var locale = "en_US"
    var strings: [String: [String: String]] = [:]
    var apnsID = UUID().uuidString.lowercased()
    var collapseID: String?

    init(_ extensionJSON: String) {
        self.extensionJSON = extensionJSON
    }

    var record: NotificationRecord {
        NotificationRecord(apnsID: apnsID, deviceToken: token, bundleID: bundleID, topic: bundleID,
                           collapseID: collapseID, headers: headers, payload: payload, receivedAt: 0,
                           status: .extensionRunning)
    }

    /// What the device would show without an extension (plain alert fields only; enough for these tests).
    var original: DisplayedContent {
        let document = (try? JSON.parse(payload)) ?? .object([])
        let alert = document["aps"]?["alert"]
        var custom = document
        custom.set("aps", nil)
        return DisplayedContent(title: alert?["title"]?.string, subtitle: alert?["subtitle"]?.string,
                                body: alert?["body"]?.string ?? alert?.string, badge: document["aps"]?["badge"]?.int,
                                userInfoJSON: custom.serialized)
    }

    var device: DeviceRecord { DeviceRecord(token: token, environment: .development, locale: locale, keys: keys) }
    var app: AppRecord { AppRecord(bundleID: bundleID, teamID: "TEAM", strings: strings, serviceExtensionJSON: extensionJSON) }
}

/// A run in progress: its result once the completion is called, and how often it was called.
final class PendingRun: Sendable {
    let startedAt = DispatchTime.now().uptimeNanoseconds
    private let state = Locked<(result: ExtensionResult?, calls: Int, finishedAt: UInt64)>((nil, 0, 0))
    private let semaphore = DispatchSemaphore(value: 0)

    func complete(_ result: ExtensionResult) {
        let first = state.withLock { state -> Bool in
            state.calls += 1
            guard state.result == nil else { return false }
            state.result = result
            state.finishedAt = DispatchTime.now().uptimeNanoseconds
            return true
        }
        if first { semaphore.signal() }
    }

    /// Waits (real time) for the completion.
    func wait(seconds: Double = 15, sourceLocation: SourceLocation = #_sourceLocation) throws -> ExtensionResult {
        _ = semaphore.wait(timeout: .now() + seconds)
        semaphore.signal()
        return try #require(state.withLock { $0.result }, "no completion within \(seconds) s", sourceLocation: sourceLocation)
    }

    var result: ExtensionResult? { state.withLock { $0.result } }
    var calls: Int { state.withLock { $0.calls } }
    /// Milliseconds from `run` to the completion (real time).
    var elapsedMilliseconds: Double { Double(state.withLock { $0.finishedAt } &- startedAt) / 1e6 }
}

/// A runtime over a temporary data directory.
final class RuntimeHarness: Sendable {
    let data: TemporaryDirectory
    let clock: any SandboxClock
    let runtime: ExtensionRuntime

    init(clock: (any SandboxClock)? = nil, configure: (inout RuntimeConfiguration) -> Void = { _ in }) throws {
        data = try TemporaryDirectory()
        self.clock = clock ?? SystemClock()
        var configuration = RuntimeConfiguration(dataDirectory: data.path)
        configure(&configuration)
        runtime = ExtensionRuntime(configuration: configuration, clock: self.clock,
                                   logger: Logger(label: "extension-tests", level: .warning))
        runtime.start()
    }

    var manualClock: ManualClock? { clock as? ManualClock }

    @discardableResult
    func run(_ push: TestPush) -> PendingRun {
        let pending = PendingRun()
        runtime.run(push.record, original: push.original, device: push.device, app: push.app) { pending.complete($0) }
        return pending
    }

    /// Runs `push` and waits for its result.
    func result(_ push: TestPush, seconds: Double = 15, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> ExtensionResult
    {
        try run(push).wait(seconds: seconds, sourceLocation: sourceLocation)
    }

    /// Where accepted attachments are stored.
    var attachmentsRoot: String { data.path + "/attachments" }

    func appGroup(_ push: TestPush) -> String { data.path + "/app-groups/" + push.token + "/" + push.bundleID }
}

extension ExtensionResult {
    /// The timeline entries of one kind, in order.
    func entries(_ step: ExtensionTimelineStep) -> [TimelineEntry] { timeline.filter { $0.step == step.rawValue } }

    func details(_ step: ExtensionTimelineStep) -> [String] { entries(step).compactMap(\.detail) }

    func has(_ step: ExtensionTimelineStep, containing text: String = "") -> Bool {
        entries(step).contains { text.isEmpty || ($0.detail ?? "").contains(text) }
    }
}

/// Polls `condition` (real time) until it holds or `seconds` pass.
@discardableResult
func waitUntil(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while !condition() {
        if DispatchTime.now().uptimeNanoseconds > deadline { return false }
        usleep(1000)
    }
    return true
}

/// Seals `plaintext` for the decrypt step: base64 of nonce | ciphertext | tag.
func encrypted(_ plaintext: String, key: [UInt8]) throws -> String {
    Data(try AESGCM.seal(Array(plaintext.utf8), key: key)).base64EncodedString()
}
