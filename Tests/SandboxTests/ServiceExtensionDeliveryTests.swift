// APNs Sandbox — the service extension seam of delivery.
import APNsProtocol
import Sandbox
import Synchronization
import Testing
import Support

/// A runner that answers at once (or never) and remembers what it was given.
final class RecordingRunner: ServiceExtensionRunner {
    private let state = Locked<(calls: Int, originals: [DisplayedContent], statuses: [NotificationStatus])>((0, [], []))
    let outcome: DisplayOutcome
    let content: DisplayedContent
    let answers: Bool

    init(outcome: DisplayOutcome, content: DisplayedContent, answers: Bool = true) {
        self.outcome = outcome
        self.content = content
        self.answers = answers
    }

    var calls: Int { state.withLock { $0.calls } }
    var originals: [DisplayedContent] { state.withLock { $0.originals } }
    var statuses: [NotificationStatus] { state.withLock { $0.statuses } }

    func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        completion: @escaping @Sendable (DisplayOutcome, DisplayedContent) -> Void
    ) {
        state.withLock {
            $0.calls += 1
            $0.originals.append(original)
            $0.statuses.append(record.status)
        }
        if answers { completion(outcome, content) }
    }
}

@Suite struct ServiceExtensionDeliveryTests {
    static let app = AppRecord(bundleID: "com.example.a", teamID: "TEAM", serviceExtensionJSON: #"{"kind":"builtin"}"#)
    static let mutable = #"{"aps":{"alert":{"title":"Secret","body":"enc"},"mutable-content":1}}"#

    /// A qualifying push runs the extension (`extension-running`) and shows its content with its outcome.
    @Test func qualifyingPushRunsTheExtension() throws {
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(title: "Secret", body: "plain"))
        let harness = DeliveryHarness(appRecords: [Self.app], runner: runner)
        let id = harness.push(payload: Self.mutable).apnsID
        #expect(runner.calls == 1)
        #expect(runner.statuses == [.extensionRunning])
        #expect(runner.originals.first?.body == "enc")
        let record = try #require(harness.record(id))
        #expect(record.status == .displayed)
        #expect(record.outcome == .processed)
        #expect(record.displayed?.body == "plain")
        #expect(record.timeline.map(\.step) == ["accepted", "delivering", "extension-running", "displayed"])
    }

    /// The extension never starts before the push's acceptance has committed (the push could still be refused).
    @Test func extensionWaitsForTheAcceptanceCommit() throws {
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(body: "plain"))
        let harness = DeliveryHarness(appRecords: [Self.app], runner: runner)
        harness.notifications.isHoldingSaves = true
        let (id, completion) = harness.push(payload: Self.mutable)
        #expect(runner.calls == 0)
        #expect(completion.callCount == 0)
        harness.notifications.isHoldingSaves = false
        harness.notifications.completeHeldSaves()
        #expect(completion.succeeded)
        #expect(runner.calls == 1)
        #expect(harness.status(id) == .displayed)
        #expect(harness.notifications.committedBatches.first?.map(\.status) == [.accepted])
    }

    /// Without `mutable-content`, without an extension configured, or without a runner, content is shown directly.
    @Test func nonQualifyingPushesAreShownDirectly() throws {
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(body: "x"))
        let harness = DeliveryHarness(appRecords: [Self.app, AppRecord(bundleID: "com.example.b", teamID: "TEAM")],
                                      runner: runner)
        let plain = harness.push(payload: #"{"aps":{"alert":{"body":"b"}}}"#).apnsID
        let noExtension = harness.push(bundleID: "com.example.b", payload: Self.mutable).apnsID
        let noAlert = harness.push(payload: #"{"aps":{"badge":1,"mutable-content":1}}"#).apnsID
        #expect(runner.calls == 0)
        for id in [plain, noExtension, noAlert] {
            #expect(harness.record(id)?.outcome == .direct)
        }
        let withoutRunner = DeliveryHarness(appRecords: [Self.app])
        #expect(withoutRunner.record(withoutRunner.push(payload: Self.mutable).apnsID)?.outcome == .direct)
    }

    /// A runner that never answers: after the watchdog the original is shown (`original-timeout`).
    @Test func silentRunnerFallsBackToTheOriginal() throws {
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(body: "x"), answers: false)
        let harness = DeliveryHarness(configure: { $0.extensionWatchdogMilliseconds = 40_000 },
                                      appRecords: [Self.app], runner: runner)
        let id = harness.push(payload: Self.mutable).apnsID
        #expect(harness.status(id) == .extensionRunning)
        harness.clock.advance(byMilliseconds: 40_000)
        let record = try #require(harness.record(id))
        #expect(record.status == .displayed)
        #expect(record.outcome == .originalTimeout)
        #expect(record.displayed?.title == "Secret")
    }
}
