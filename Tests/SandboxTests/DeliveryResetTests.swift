// APNs Sandbox — the delivery engine's part in a reset (forget) and in restoring a snapshot (adopt).
import APNsProtocol
import Sandbox
import Testing

@Suite struct DeliveryResetTests {
    let token = DeliveryHarness.token

    /// A stored push that is forgotten is never delivered, expired or saved again, and its timer goes.
    @Test func forgottenStoredPushIsNeverWrittenAgain() throws {
        let harness = DeliveryHarness(online: false)
        let stored = harness.push(expiration: (DeliveryHarness.start + 60_000) / 1000).apnsID
        #expect(harness.status(stored) == .stored)
        let saves = harness.notifications.committedVersions.count
        #expect(harness.engine.forget(DeliveryEngine.ResetSelection(deviceTokens: [token])) == 1)
        try harness.engine.setOnline(true, token: token)
        harness.clock.advance(byMilliseconds: 120_000)
        #expect(harness.notifications.committedVersions.count == saves, "nothing of the forgotten push is saved")
        #expect(harness.clock.pendingTaskCount == 0, "no timer is left for it")
        // The device goes on: a new push is delivered.
        let next = harness.push().apnsID
        #expect(harness.status(next) == .displayed)
    }

    /// A push whose acceptance is in the store's hands when it is forgotten: the commit completes it
    /// (200), nothing after it is saved. One whose acceptance was still waiting is completed at once with
    /// success and never saved; the device's next push is delivered at once again.
    @Test func acceptancesInFlightAndWaitingAreCompletedAndNothingFollows() throws {
        let harness = DeliveryHarness()
        harness.notifications.isHoldingSaves = true
        let (first, firstDone) = harness.push()
        let (second, secondDone) = harness.push()
        #expect(harness.notifications.heldSaveCount == 1, "the second push waits behind the first batch")
        #expect(harness.engine.forget(.everything) == 2)
        #expect(secondDone.succeeded && secondDone.callCount == 1, "a waiting acceptance is completed with success")
        #expect(firstDone.callCount == 0, "the batch in flight completes it")
        harness.notifications.completeHeldSaves()
        #expect(firstDone.succeeded && firstDone.callCount == 1)
        #expect(harness.notifications.heldSaveCount == 0)
        #expect(harness.record(second) == nil, "the waiting push is never written")
        #expect(harness.notifications.committedVersions.allSatisfy { $0.apnsID == first })
        harness.notifications.isHoldingSaves = false
        let next = harness.push().apnsID
        #expect(harness.status(next) == .displayed)
        #expect(harness.steps(next) == ["accepted", "delivering", "displayed"], "delivered at once, not held back")
    }

    /// A save of a forgotten push that was in flight and fails is not tried again; one waiting for its retry
    /// is dropped.
    @Test func failedSavesOfForgottenPushesAreNotRetried() throws {
        let harness = DeliveryHarness(online: false)
        let stored = harness.push().apnsID
        #expect(harness.status(stored) == .stored)
        harness.notifications.isHoldingSaves = true
        try harness.engine.setOnline(true, token: token)
        #expect(harness.notifications.heldSaveCount == 1, "delivering and displayed are in flight")
        harness.engine.forget(.everything)
        let versions = harness.notifications.committedVersions.count
        #expect(harness.notifications.failFirstHeldSave())
        harness.notifications.isHoldingSaves = false
        harness.clock.advance(byMilliseconds: 5_000)
        #expect(harness.notifications.committedVersions.count == versions, "no retry")
        #expect(harness.status(stored) == .stored)
        #expect(harness.clock.pendingTaskCount == 0)

        // A retry already waiting when the push is forgotten.
        let other = DeliveryHarness(online: false)
        let waiting = other.push().apnsID
        other.notifications.failNextSaves(1)
        try other.engine.setOnline(true, token: token)
        #expect(other.clock.pendingTaskCount == 1, "the retry's timer")
        let before = other.notifications.committedVersions.count
        other.engine.forget(DeliveryEngine.ResetSelection(deviceTokens: [token]))
        other.clock.advance(byMilliseconds: 5_000)
        #expect(other.notifications.committedVersions.count == before)
        #expect(other.status(waiting) == .stored)
        #expect(other.clock.pendingTaskCount == 0)
    }

    /// An app's selection forgets only that app's pushes and background budget; the device's other app
    /// goes on.
    @Test func appSelectionForgetsOnlyThatApp() throws {
        let harness = DeliveryHarness(online: false)
        let a = harness.push(bundleID: "com.example.a").apnsID
        let b = harness.push(bundleID: "com.example.b").apnsID
        #expect(harness.engine.forget(DeliveryEngine.ResetSelection(bundleIDs: ["com.example.a"])) == 1)
        try harness.engine.setOnline(true, token: token)
        #expect(harness.status(a) == .stored, "forgotten: left as it was, for the store's delete")
        #expect(harness.status(b) == .displayed)
    }

    /// Records restored into the store are taken over without a save: a stored one stays exactly as it is
    /// until its device comes online, then it is delivered; final ones are left alone.
    @Test func adoptedStoredRecordWaitsForItsDevice() throws {
        var stored = NotificationRecord(
            apnsID: "restored", deviceToken: token, bundleID: "com.example.a", topic: "com.example.a",
            payload: #"{"aps":{"alert":"Back"}}"#, receivedAt: DeliveryHarness.start, status: .stored,
            timeline: [TimelineEntry(step: "accepted", at: DeliveryHarness.start, monotonic: 1),
                       TimelineEntry(step: "stored", at: DeliveryHarness.start, monotonic: 2, detail: "device offline")])
        var displayed = stored
        displayed.apnsID = "done"
        displayed.status = .displayed
        let harness = DeliveryHarness(online: false, existing: [stored, displayed])
        harness.engine.adopt([displayed, stored])
        #expect(harness.notifications.committedVersions.isEmpty, "nothing is rewritten")
        try harness.engine.setOnline(true, token: token)
        stored = try #require(harness.record("restored"))
        #expect(stored.status == .displayed)
        #expect(stored.timeline.map(\.step) == ["accepted", "stored", "delivering", "displayed"], "no resumed entry")
        #expect(harness.record("done")?.status == .displayed)
    }

    /// After the device record changed behind the engine (a reset put it back online), resynchronizing
    /// delivers what the engine still holds for it.
    @Test func resynchronizeTakesTheOnlineStateFromTheRecord() throws {
        let harness = DeliveryHarness(online: false)
        let stored = harness.push().apnsID
        var device = try #require(harness.device())
        device.isOnline = true
        try harness.devices.saveDevice(device)
        #expect(harness.status(stored) == .stored)
        harness.engine.resynchronize(tokens: [token])
        #expect(harness.status(stored) == .displayed)
    }
}
