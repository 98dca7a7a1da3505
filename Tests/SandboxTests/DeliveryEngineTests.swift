// APNs Sandbox — the delivery engine: display, timeline, durability, recovery.
import APNsProtocol
import Sandbox
import Testing

@Suite struct DeliveryEngineTests {
    /// An alert push to an online device is displayed at once with every content field from the payload.
    @Test func displaysDirectlyWithContentFields() throws {
        let harness = DeliveryHarness()
        let payload = """
            {"aps":{"alert":{"title":"T","subtitle":"S","body":"B"},"badge":4,\
            "sound":{"critical":1,"name":"alarm.caf","volume":0.5},"thread-id":"chat-1","category":"MSG",\
            "interruption-level":"time-sensitive","target-content-id":"win-2","relevance-score":0.75},\
            "custom": {"a": [1, 2.50]}, "n":7}
            """
        let (id, completion) = harness.push(payload: payload)
        #expect(completion.succeeded)
        let record = try #require(harness.record(id))
        #expect(record.status == .displayed)
        #expect(record.outcome == .direct)
        let content = try #require(record.displayed)
        #expect(content == DisplayedContent(
            title: "T", subtitle: "S", body: "B", badge: 4, sound: "alarm.caf", threadID: "chat-1", category: "MSG",
            interruptionLevel: "time-sensitive", targetContentID: "win-2", relevanceScore: 0.75,
            userInfoJSON: #"{"custom":{"a": [1, 2.50]},"n":7}"#))
    }

    /// Every step lands in the timeline in order, with wall and monotonic times, and each committed change is
    /// announced in order.
    @Test func timelineRecordsEveryStepInOrder() throws {
        let harness = DeliveryHarness()
        let (id, _) = harness.push()
        let record = try #require(harness.record(id))
        #expect(record.timeline.map(\.step) == ["accepted", "delivering", "displayed"])
        #expect(record.timeline.last?.detail == "direct")
        #expect(record.timeline.allSatisfy { $0.at == DeliveryHarness.start && $0.monotonic > 0 })
        #expect(zip(record.timeline, record.timeline.dropFirst()).allSatisfy { $0.monotonic <= $1.monotonic })
        let announced = harness.changes.withLock { $0 }.filter { $0.apnsID == id }.map(\.status)
        #expect(announced == [.accepted, .delivering, .displayed])
        #expect(harness.notifications.committedVersions.filter { $0.apnsID == id }.map(\.status)
            == [.accepted, .delivering, .displayed])
    }

    /// The provider's completion runs only once the accepted record is committed, and delivery waits for it.
    @Test func completionRunsOnlyAfterTheRecordIsSaved() throws {
        let harness = DeliveryHarness()
        harness.notifications.isHoldingSaves = true
        let (id, completion) = harness.push()
        #expect(completion.callCount == 0)
        #expect(harness.record(id) == nil)
        #expect(harness.changes.withLock { $0.isEmpty })
        #expect(harness.notifications.heldSaveCount == 1)
        harness.notifications.completeHeldSaves()
        #expect(completion.callCount == 1)
        #expect(completion.succeeded)
        #expect(harness.status(id) == .displayed)
    }

    /// A push that goes straight to an online device is delivered before its acceptance commits and
    /// committed with it: one save holding every step, and its two events in the same commit.
    @Test func directPushIsDeliveredInItsAcceptanceCommit() throws {
        let harness = DeliveryHarness()
        let (id, completion) = harness.push()
        #expect(completion.succeeded)
        let batches = harness.notifications.committedBatches
        #expect(batches.count == 1)
        #expect(batches.first?.map(\.status) == [.accepted, .delivering, .displayed])
        #expect(batches.first?.allSatisfy { $0.apnsID == id } == true)
        #expect(harness.notifications.committedEvents.map(\.type) == [.pushAccepted, .notificationDisplayed])
        #expect(harness.changes.withLock { $0.map(\.status) } == [.accepted, .delivering, .displayed])
    }

    /// A VoIP push is delivered silently in its acceptance commit too.
    @Test func silentPushIsDeliveredInItsAcceptanceCommit() throws {
        let harness = DeliveryHarness()
        let (id, _) = harness.push(payload: #"{"aps":{}}"#, pushType: "voip")
        #expect(harness.notifications.committedBatches.map { $0.map(\.status) }
            == [[.accepted, .delivering, .deliveredSilent]])
        #expect(harness.status(id) == .deliveredSilent)
    }

    /// Pushes that do not go straight to the device (offline, batched low priority, background) are
    /// committed as `accepted` alone first, as before.
    @Test func queuedPushesCommitTheirAcceptanceAlone() throws {
        let offline = DeliveryHarness(online: false)
        offline.push()
        #expect(offline.notifications.committedBatches.first?.map(\.status) == [.accepted])
        let batched = DeliveryHarness(configure: { $0.lowPriorityDelayMilliseconds = 500 })
        batched.push(priority: 5)
        #expect(batched.notifications.committedBatches.first?.map(\.status) == [.accepted])
        let background = DeliveryHarness()
        background.backgroundPush()
        #expect(background.notifications.committedBatches.first?.map(\.status) == [.accepted])
    }

    /// A push accepted while an earlier one still waits for its acceptance commit is not delivered at
    /// once: it would overtake the earlier one. Both are shown in acceptance order.
    @Test func noPushOvertakesAnAcceptanceAwaitingItsCommit() throws {
        let harness = DeliveryHarness(online: false)
        harness.notifications.isHoldingSaves = true
        let (first, _) = harness.push()
        try harness.engine.setOnline(true, token: DeliveryHarness.token)
        let (second, _) = harness.push()
        harness.notifications.isHoldingSaves = false
        harness.notifications.completeHeldSaves()
        #expect(harness.status(first) == .displayed)
        #expect(harness.status(second) == .displayed)
        let displayed = harness.changes.withLock { $0.filter { $0.status == .displayed }.map(\.apnsID) }
        #expect(displayed == [first, second])
        // The second could have been shown in its accepting step (its content was built for that) but was
        // routed after the commit: it is shown all the same, with the same content.
        for id in [first, second] {
            #expect(harness.record(id)?.displayed?.body == "Hi")
            #expect(harness.record(id)?.outcome == .direct)
            #expect(harness.steps(id) == ["accepted", "delivering", "displayed"])
        }
        // Once nothing waits, pushes go straight through again.
        let (third, _) = harness.push()
        #expect(harness.notifications.committedBatches.last?.map(\.status) == [.accepted, .delivering, .displayed])
        #expect(harness.status(third) == .displayed)
    }

    /// A failed acceptance save is reported to the provider and the push goes no further.
    @Test func failedAcceptanceSaveDropsThePush() throws {
        let harness = DeliveryHarness()
        harness.notifications.failNextSaves(1)
        let (id, completion) = harness.push()
        #expect(completion.failed)
        #expect(harness.record(id) == nil)
        // Its delivery was in the failed commit too; none of it is retried.
        harness.clock.advance(byMilliseconds: 5000)
        #expect(harness.record(id) == nil)
        #expect(harness.changes.withLock { $0.isEmpty })
        #expect(harness.notifications.committedEvents.isEmpty)
        let (next, nextCompletion) = harness.push()
        #expect(nextCompletion.succeeded)
        #expect(harness.status(next) == .displayed)
    }

    /// A failed save of a later step is retried after a second; the record still reaches its final status.
    @Test func failedLaterSaveIsRetried() throws {
        let harness = DeliveryHarness(online: false)
        let (id, _) = harness.push()
        #expect(harness.status(id) == .stored)
        harness.notifications.failNextSaves(1)
        try harness.engine.setOnline(true, token: DeliveryHarness.token)
        #expect(harness.status(id) == .stored)
        harness.clock.advance(byMilliseconds: 1000)
        #expect(harness.status(id) == .displayed)
        #expect(harness.steps(id) == ["accepted", "stored", "delivering", "displayed"])
    }

    /// After a restart, accepted, stored and delivering records resume; stored ones wait for their device.
    @Test func recoverResumesUnfinishedRecords() throws {
        let start = DeliveryHarness.start
        func record(_ id: String, _ status: NotificationStatus, token: String = DeliveryHarness.token,
                    expiration: Int64? = nil) -> NotificationRecord {
            NotificationRecord(
                apnsID: id, deviceToken: token, bundleID: id == "stored-b" ? "com.example.b" : "com.example.a",
                topic: "com.example.a", expiration: expiration, payload: #"{"aps":{"alert":"Hi"}}"#,
                receivedAt: start - 5000, status: status,
                timeline: [TimelineEntry(step: status.rawValue, at: start - 5000, monotonic: 1)])
        }
        let harness = DeliveryHarness(existing: [
            record("accepted", .accepted), record("stored-b", .stored), record("delivering", .delivering),
            record("stale", .stored, expiration: (start - 1000) / 1000), record("done", .displayed),
        ])
        try harness.engine.recover()
        #expect(harness.status("accepted") == .displayed)
        #expect(harness.status("stored-b") == .displayed)
        #expect(harness.status("delivering") == .displayed)
        #expect(harness.status("stale") == .expired)
        #expect(harness.steps("accepted") == ["accepted", "resumed", "delivering", "displayed"])
        #expect(harness.steps("delivering") == ["delivering", "resumed", "delivering", "displayed"])
        #expect(harness.record("done")?.timeline.count == 1)
    }

    /// Recovered stored records for an offline device stay stored until it comes online, then deliver.
    @Test func recoverKeepsStoredRecordsOfOfflineDevices() throws {
        let start = DeliveryHarness.start
        let stored = NotificationRecord(
            apnsID: "s", deviceToken: DeliveryHarness.token, bundleID: "com.example.a", topic: "com.example.a",
            payload: #"{"aps":{"alert":"Hi"}}"#, receivedAt: start - 5000, status: .stored,
            timeline: [TimelineEntry(step: "stored", at: start - 5000, monotonic: 1, detail: "device offline")])
        let harness = DeliveryHarness(online: false, existing: [stored])
        try harness.engine.recover()
        #expect(harness.status("s") == .stored)
        try harness.engine.setOnline(true, token: DeliveryHarness.token)
        #expect(harness.status("s") == .displayed)
    }

    /// A device the repository does not know is treated as online with every app installed.
    @Test func unknownDeviceIsOnline() throws {
        let harness = DeliveryHarness()
        var record = harness.makeRecord()
        record.deviceToken = String(repeating: "cd", count: 32)
        let box = CompletionBox()
        harness.engine.accept(record) { box.set($0) }
        #expect(harness.status(record.apnsID) == .displayed)
    }
}
