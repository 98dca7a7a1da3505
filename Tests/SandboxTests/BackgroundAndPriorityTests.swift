// APNs Sandbox — background pushes (budget, hold) and low-priority batching.
import APNsProtocol
import Sandbox
import Testing

@Suite struct BackgroundAndPriorityTests {
    let token = DeliveryHarness.token

    /// Background pushes are delivered silently, three an hour: the fourth and fifth are held, only the newest
    /// held one survives, and it is delivered once the first delivery leaves the one-hour window.
    @Test func backgroundBudgetHoldsTheNewestAndDeliversItLater() {
        let harness = DeliveryHarness()
        let delivered = (0..<3).map { _ in harness.backgroundPush() }
        for id in delivered {
            #expect(harness.status(id) == .deliveredSilent)
            #expect(harness.steps(id) == ["accepted", "delivering", "delivered-silent"])
            #expect(harness.record(id)?.displayed == nil)
        }
        harness.clock.advance(byMilliseconds: 60_000)
        let fourth = harness.backgroundPush()
        let fifth = harness.backgroundPush()
        #expect(harness.status(fourth) == .discarded)
        #expect(harness.record(fourth)?.timeline.last?.detail == "coalesced")
        #expect(harness.status(fifth) == .stored)
        #expect(harness.record(fifth)?.timeline.last?.detail?.hasPrefix("throttled") == true)
        // Another app has its own budget.
        #expect(harness.status(harness.backgroundPush(bundleID: "com.example.b")) == .deliveredSilent)
        harness.clock.advance(byMilliseconds: 3_600_000 - 60_000 - 1)
        #expect(harness.status(fifth) == .stored)
        harness.clock.advance(byMilliseconds: 1)
        #expect(harness.status(fifth) == .deliveredSilent)
    }

    /// `content-available` alone makes a push background even without the push-type header; it never
    /// runs the service extension.
    @Test func silentPayloadIsBackgroundWithoutHeader() {
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(body: "changed"))
        let harness = DeliveryHarness(
            appRecords: [AppRecord(bundleID: "com.example.a", teamID: "T", serviceExtensionJSON: "{}")], runner: runner)
        let id = harness.push(payload: #"{"aps":{"content-available":1,"mutable-content":1}}"#, priority: 5).apnsID
        #expect(harness.status(id) == .deliveredSilent)
        #expect(runner.calls == 0)
    }

    /// With a budget of 0 there is no throttle.
    @Test func zeroBudgetMeansNoThrottle() {
        let harness = DeliveryHarness(configure: { $0.backgroundPushesPerHour = 0 })
        let ids = (0..<10).map { _ in harness.backgroundPush() }
        #expect(ids.allSatisfy { harness.status($0) == .deliveredSilent })
    }

    /// Priority 5 waits for the low-priority batch (opened by the first such push); priority 10 does not.
    @Test func lowPriorityIsDelayedAndBatched() {
        let harness = DeliveryHarness(configure: { $0.lowPriorityDelayMilliseconds = 1000 })
        let first = harness.push(priority: 5).apnsID
        #expect(harness.status(first) == .accepted)
        #expect(harness.steps(first) == ["accepted", "deferred"])
        harness.clock.advance(byMilliseconds: 500)
        let second = harness.push(priority: 1).apnsID
        let urgent = harness.push(priority: 10).apnsID
        #expect(harness.status(urgent) == .displayed)
        harness.clock.advance(byMilliseconds: 499)
        #expect(harness.status(first) == .accepted)
        harness.clock.advance(byMilliseconds: 1)
        #expect(harness.status(first) == .displayed)
        #expect(harness.status(second) == .displayed)
        #expect(harness.record(first)?.timeline.last?.at == DeliveryHarness.start + 1000)
    }

    /// With no delay configured, priority 5 is delivered at once.
    @Test func lowPriorityWithoutDelayIsImmediate() {
        let harness = DeliveryHarness()
        #expect(harness.status(harness.push(priority: 5).apnsID) == .displayed)
    }

    /// A batched push whose device went offline meanwhile is stored when the batch falls due.
    @Test func batchedPushIsStoredIfDeviceWentOffline() throws {
        let harness = DeliveryHarness(configure: { $0.lowPriorityDelayMilliseconds = 1000 })
        let id = harness.push(priority: 5).apnsID
        try harness.engine.setOnline(false, token: token)
        harness.clock.advance(byMilliseconds: 1000)
        #expect(harness.status(id) == .stored)
        try harness.engine.setOnline(true, token: token)
        #expect(harness.status(id) == .displayed)
    }

    /// VoIP pushes reach the app without an alert or a budget.
    @Test func voipIsDeliveredSilently() {
        let harness = DeliveryHarness()
        let id = harness.push(payload: #"{"aps":{"alert":"call"}}"#, pushType: "voip").apnsID
        #expect(harness.status(id) == .deliveredSilent)
        #expect(harness.record(id)?.timeline.last?.detail == "voip")
    }
}
