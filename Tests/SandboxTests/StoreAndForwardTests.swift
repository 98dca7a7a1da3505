// APNs Sandbox — offline devices: storage per app, expiry, the 30-day cap, uninstall.
import APNsProtocol
import Sandbox
import Testing

@Suite struct StoreAndForwardTests {
    let token = DeliveryHarness.token

    /// Three pushes for one app while offline: the two older are discarded ("coalesced"), the newest is
    /// stored and displayed when the device comes online.
    @Test func offlinePushesCoalescePerApp() throws {
        let harness = DeliveryHarness(online: false)
        let first = harness.push().apnsID
        let second = harness.push().apnsID
        let third = harness.push().apnsID
        #expect(harness.status(first) == .discarded)
        #expect(harness.record(first)?.timeline.last?.detail == "coalesced")
        #expect(harness.status(second) == .discarded)
        #expect(harness.status(third) == .stored)
        #expect(harness.record(third)?.timeline.last?.detail == "device offline")
        try harness.engine.setOnline(true, token: token)
        #expect(harness.device()?.isOnline == true)
        #expect(harness.status(third) == .displayed)
        #expect(harness.steps(third) == ["accepted", "stored", "delivering", "displayed"])
        #expect(try harness.center().notifications.map(\.apnsID) == [third])
    }

    /// Each app keeps its own stored push; coming online delivers them oldest first.
    @Test func otherAppsStoredPushesAreKeptSeparately() throws {
        let harness = DeliveryHarness(online: false)
        let a = harness.push(bundleID: "com.example.a").apnsID
        let b = harness.push(bundleID: "com.example.b").apnsID
        #expect(harness.status(a) == .stored)
        #expect(harness.status(b) == .stored)
        harness.clock.advance(byMilliseconds: 10)
        try harness.engine.setOnline(true, token: token)
        #expect(harness.status(a) == .displayed)
        #expect(harness.status(b) == .displayed)
        let displayed = harness.changes.withLock { $0 }.filter { $0.status == .displayed }.map(\.apnsID)
        #expect(displayed == [a, b])
    }

    /// `apns-expiration: 0` delivers to an online device and expires at once for an offline one.
    @Test func expirationZeroDeliversNowOrNever() throws {
        let online = DeliveryHarness()
        #expect(online.status(online.push(expiration: 0).apnsID) == .displayed)
        let offline = DeliveryHarness(online: false)
        let id = offline.push(expiration: 0).apnsID
        #expect(offline.status(id) == .expired)
        #expect(offline.steps(id) == ["accepted", "expired"])
        try offline.engine.setOnline(true, token: token)
        #expect(offline.status(id) == .expired)
    }

    /// An expiration already past at acceptance expires the push, even for an online device.
    @Test func pastExpirationExpiresAtOnce() {
        let harness = DeliveryHarness()
        let id = harness.push(expiration: DeliveryHarness.start / 1000 - 1).apnsID
        #expect(harness.status(id) == .expired)
        #expect(harness.record(id)?.timeline.last?.detail == "apns-expiration passed")
    }

    /// A stored push whose expiration passes while the device is offline expires then.
    @Test func futureExpirationPassingWhileStoredExpires() throws {
        let harness = DeliveryHarness(online: false)
        let id = harness.push(expiration: DeliveryHarness.start / 1000 + 60).apnsID
        #expect(harness.status(id) == .stored)
        harness.clock.advance(byMilliseconds: 59_999)
        #expect(harness.status(id) == .stored)
        harness.clock.advance(byMilliseconds: 1)
        #expect(harness.status(id) == .expired)
        #expect(harness.record(id)?.timeline.last?.detail == "apns-expiration passed")
        try harness.engine.setOnline(true, token: token)
        #expect(harness.status(id) == .expired)
        #expect(harness.clock.pendingTaskCount == 0)
    }

    /// Storage is capped at 30 days from receipt, whatever `apns-expiration` says (or without one).
    @Test func storageIsCappedAtThirtyDays() {
        let harness = DeliveryHarness(online: false)
        let thirtyDays: Int64 = 30 * 24 * 3_600_000
        let far = harness.push(bundleID: "com.example.a", expiration: DeliveryHarness.start / 1000 + 40 * 86_400).apnsID
        let none = harness.push(bundleID: "com.example.b").apnsID
        harness.clock.advance(byMilliseconds: thirtyDays - 1)
        #expect(harness.status(far) == .stored)
        #expect(harness.status(none) == .stored)
        harness.clock.advance(byMilliseconds: 1)
        #expect(harness.status(far) == .expired)
        #expect(harness.status(none) == .expired)
        #expect(harness.record(far)?.timeline.last?.detail == "storage limit reached")
    }

    /// Uninstalling an app discards its stored push and marks the app uninstalled on the device.
    @Test func uninstallDiscardsStoredPushes() throws {
        let harness = DeliveryHarness(online: false)
        let a = harness.push(bundleID: "com.example.a").apnsID
        let b = harness.push(bundleID: "com.example.b").apnsID
        try harness.engine.uninstall(bundleID: "com.example.a", token: token)
        #expect(harness.status(a) == .discarded)
        #expect(harness.record(a)?.timeline.last?.detail == "app uninstalled")
        #expect(harness.device()?.apps.first { $0.bundleID == "com.example.a" }?.uninstalledAt == DeliveryHarness.start)
        try harness.engine.setOnline(true, token: token)
        #expect(harness.status(b) == .displayed)
        // Later pushes for the removed app are discarded at delivery.
        let late = harness.push(bundleID: "com.example.a").apnsID
        #expect(harness.status(late) == .discarded)
    }

    /// Going offline after acceptance does not affect pushes already displayed; new ones are stored.
    @Test func goingOfflineStoresLaterPushes() throws {
        let harness = DeliveryHarness()
        let before = harness.push().apnsID
        try harness.engine.setOnline(false, token: token)
        #expect(harness.device()?.isOnline == false)
        let after = harness.push().apnsID
        #expect(harness.status(before) == .displayed)
        #expect(harness.status(after) == .stored)
    }
}
