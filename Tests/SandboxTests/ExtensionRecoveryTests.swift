// APNs Sandbox — a service extension runs at most once, across crashes: it starts only after its push's
// `extension-running` committed, and recovery finalises what was interrupted instead of running it again.
import APNsProtocol
import Sandbox
import Testing

@Suite struct ExtensionRecoveryTests {
    static let app = ServiceExtensionDeliveryTests.app
    static let mutable = ServiceExtensionDeliveryTests.mutable

    /// A push taken through its saves one commit at a time, with the store to restart from at each step.
    struct SteppedPush {
        let harness: DeliveryHarness
        let runner: RecordingRunner
        let id: String

        init(answers: Bool = true) {
            runner = RecordingRunner(outcome: .processed, content: DisplayedContent(title: "Secret", body: "plain"),
                                     answers: answers)
            harness = DeliveryHarness(appRecords: [ExtensionRecoveryTests.app], runner: runner)
            harness.notifications.isHoldingSaves = true
            id = harness.push(payload: ExtensionRecoveryTests.mutable).apnsID
        }

        /// Commits the oldest held batch.
        func commitNext() { #expect(harness.notifications.completeFirstHeldSave()) }

        /// The engine of a restarted sandbox over what has committed so far, with a fresh runner.
        func restart() throws -> (DeliveryHarness, RecordingRunner) {
            let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(title: "Secret", body: "again"))
            let restarted = DeliveryHarness(appRecords: [ExtensionRecoveryTests.app],
                                            existing: harness.notifications.committedRecords, runner: runner)
            try restarted.engine.recover()
            return (restarted, runner)
        }
    }

    /// The extension starts only once `extension-running` has committed, not when it is handed to the
    /// store: until then the store says `accepted` or `delivering`, which a restart may deliver again.
    @Test func extensionStartsOnlyAfterExtensionRunningCommits() throws {
        let push = SteppedPush()
        push.commitNext()  // the acceptance
        #expect(push.runner.calls == 0)
        #expect(push.harness.status(push.id) == .accepted)
        #expect(push.harness.notifications.heldSaveCount == 1, "delivering + extension-running, held")
        push.commitNext()
        #expect(push.runner.calls == 1)
        #expect(push.runner.statuses == [.extensionRunning])
        #expect(push.harness.status(push.id) == .extensionRunning)
        push.harness.notifications.isHoldingSaves = false
        push.harness.notifications.completeHeldSaves()
        #expect(push.harness.record(push.id)?.outcome == .processed)
        #expect(push.harness.steps(push.id) == ["accepted", "delivering", "extension-running", "displayed"])
    }

    /// A crash after the acceptance committed but before `extension-running` did: the extension never
    /// started, so the restart delivers the push as usual and runs it, once.
    @Test func crashBeforeTheExtensionStartedRunsItOnce() throws {
        let push = SteppedPush()
        push.commitNext()
        #expect(push.runner.calls == 0)
        let (restarted, runner) = try push.restart()
        #expect(runner.calls == 1)
        let record = try #require(restarted.record(push.id))
        #expect(record.status == .displayed)
        #expect(record.outcome == .processed)
        #expect(record.displayed?.body == "again")
        #expect(restarted.steps(push.id) == ["accepted", "resumed", "delivering", "extension-running", "displayed"])
    }

    /// A crash while the extension ran (`extension-running` committed, no answer yet): the restart shows
    /// the original content as `original-crash`, says why, and does not run the extension again.
    @Test func crashWhileTheExtensionRanFinalisesItOnce() throws {
        let push = SteppedPush(answers: false)
        push.commitNext()
        push.commitNext()
        #expect(push.runner.calls == 1)
        #expect(push.harness.status(push.id) == .extensionRunning)

        let (restarted, runner) = try push.restart()
        #expect(runner.calls == 0, "the extension is not run a second time")
        let record = try #require(restarted.record(push.id))
        #expect(record.status == .displayed)
        #expect(record.outcome == .originalCrash)
        #expect(record.displayed?.title == "Secret" && record.displayed?.body == "enc", "the original content")
        #expect(restarted.steps(push.id) == ["accepted", "delivering", "extension-running", "resumed", "displayed"])
        let displayed = try #require(record.timeline.last)
        #expect(displayed.detail?.contains("restarted while the service extension was running") == true,
                "\(String(describing: displayed.detail))")
        // Final once: one `displayed` save and one event, and nothing more to do.
        #expect(restarted.notifications.committedVersions.filter { $0.status == .displayed }.count == 1)
        let events = restarted.notifications.committedEvents.filter { $0.type == .notificationDisplayed }
        #expect(events.count == 1)
        let event = String(decoding: try #require(events.first).data, as: UTF8.self)
        #expect(event.contains(#""outcome":"original-crash""#), "\(event)")
        #expect(!event.contains("extensionMs"), "no duration across two runs' monotonic clocks: \(event)")
        try restarted.engine.recover()
        #expect(runner.calls == 0)
        #expect(restarted.notifications.committedVersions.filter { $0.status == .displayed }.count == 1)
    }

    /// Recovered `delivering` pushes that qualify run their extension (it had not started); recovered
    /// `extension-running` ones of the same device are finalised; each exactly once.
    @Test func recoveryTellsStartedFromNotStarted() throws {
        let start = DeliveryHarness.start
        func record(_ id: String, _ steps: [NotificationStatus]) -> NotificationRecord {
            NotificationRecord(
                apnsID: id, deviceToken: DeliveryHarness.token, bundleID: "com.example.a", topic: "com.example.a",
                payload: Self.mutable, receivedAt: start - 5000, status: steps.last ?? .accepted,
                timeline: steps.map { TimelineEntry(step: $0.rawValue, at: start - 5000, monotonic: 1) })
        }
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(title: "T", body: "ran"))
        let harness = DeliveryHarness(appRecords: [Self.app], existing: [
            record("accepted", [.accepted]), record("delivering", [.accepted, .delivering]),
            record("running", [.accepted, .delivering, .extensionRunning]),
        ], runner: runner)
        try harness.engine.recover()
        #expect(runner.calls == 2)
        #expect(harness.record("accepted")?.outcome == .processed)
        #expect(harness.record("delivering")?.outcome == .processed)
        #expect(harness.record("running")?.outcome == .originalCrash)
        #expect(harness.record("running")?.displayed?.body == "enc")
    }
}
