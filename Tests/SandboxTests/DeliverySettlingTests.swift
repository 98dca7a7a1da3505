// APNs Sandbox — steering calls answer once what they set off has committed (saves and callbacks on other threads).
import Dispatch
import Glibc
import Sandbox
import Support
import Testing

/// With callbacks on dispatch queues and a store that commits later (as the server runs), a clock change or a
/// device coming online is followed by saves on other threads; ``DeliveryEngine/waitUntilSettled(token:)`` and
/// ``DeliveryEngine/waitUntilAllSettled()`` wait for them, so that a test reading the record right after reads
/// the committed change.
@Suite struct DeliverySettlingTests {
    let token = DeliveryHarness.token

    /// An engine whose save completions and timers run on dispatch queues, and a device offline.
    private func asyncHarness(timeoutMilliseconds: Int64 = 10_000) -> DeliveryHarness {
        DeliveryHarness(configure: {
            $0.runsCallbacksInline = false
            $0.settleTimeoutMilliseconds = timeoutMilliseconds
        }, online: false)
    }

    /// Commits the saves the store holds, `afterMilliseconds` from now, on another thread (the store's writer).
    private func commitLater(_ harness: DeliveryHarness, afterMilliseconds: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(afterMilliseconds)) {
            harness.notifications.isHoldingSaves = false
            harness.notifications.completeHeldSaves()
        }
    }

    /// Waits for the device in bounds of the harness's timeout, up to 50 of them: blocked test threads hold
    /// dispatch's threads (Swift concurrency runs on them on Linux), and dispatch adds one for the callbacks only
    /// after a stall of about 100 ms.
    private func settled(_ harness: DeliveryHarness) -> Bool {
        (0..<50).contains { _ in harness.engine.waitUntilSettled(token: token) }
    }

    /// A push stored for the offline device, its `stored` committed.
    private func storedPush(_ harness: DeliveryHarness) -> String {
        let id = harness.push(expiration: DeliveryHarness.start / 1000 + 60).apnsID
        #expect(settled(harness))
        #expect(harness.status(id) == .stored)
        return id
    }

    /// The pytest recipe's race: the clock passes a stored push's expiration; its timer's callback and the save of
    /// `expired` run on other threads, the save committing 200 ms later. Waiting for every device returns after.
    @Test func clockChangeWaitsForTheExpiriesItFired() throws {
        let harness = asyncHarness()
        let id = storedPush(harness)
        harness.notifications.isHoldingSaves = true
        harness.clock.advance(byMilliseconds: 61_000)
        commitLater(harness, afterMilliseconds: 200)
        #expect(harness.engine.waitUntilAllSettled())
        #expect(harness.status(id) == .expired)
        #expect(harness.record(id)?.timeline.last?.detail == "apns-expiration passed")
    }

    /// A device coming online: the stored push's delivery commits (through `delivering` to `displayed`) before the
    /// wait for the device returns.
    @Test func comingOnlineWaitsForTheStoredPushesDelivery() throws {
        let harness = asyncHarness()
        let id = storedPush(harness)
        harness.notifications.isHoldingSaves = true
        try harness.engine.setOnline(true, token: token)
        #expect(harness.status(id) == .stored)
        commitLater(harness, afterMilliseconds: 200)
        #expect(harness.engine.waitUntilSettled(token: token))
        #expect(harness.status(id) == .displayed)
    }

    /// A store that does not commit within the bound: the wait gives up (false) instead of blocking the API
    /// call for good, and settles once the store commits.
    @Test func waitIsBoundedInRealTime() throws {
        let harness = asyncHarness(timeoutMilliseconds: 100)
        let id = storedPush(harness)
        harness.notifications.isHoldingSaves = true
        try harness.engine.setOnline(true, token: token)
        let started = DispatchTime.now()
        #expect(!harness.engine.waitUntilSettled(token: token))
        #expect(!harness.engine.waitUntilAllSettled())
        let waited = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
        #expect(waited >= 200 && waited < 5000)
        commitLater(harness, afterMilliseconds: 0)
        #expect(settled(harness))
        #expect(harness.status(id) == .displayed)
    }

    /// A running service extension is not waited for: the wait returns once `extension-running` committed.
    @Test func runningExtensionIsNotAwaited() throws {
        let app = AppRecord(bundleID: "com.example.a", teamID: "TEAM", serviceExtensionJSON: #"{"kind":"builtin"}"#)
        let runner = RecordingRunner(outcome: .processed, content: DisplayedContent(body: "plain"), answers: false)
        let harness = DeliveryHarness(configure: { $0.runsCallbacksInline = false }, online: false,
                                      appRecords: [app], runner: runner)
        let id = harness.push(payload: #"{"aps":{"alert":{"body":"enc"},"mutable-content":1}}"#).apnsID
        #expect(harness.engine.waitUntilSettled(token: token))
        #expect(harness.status(id) == .stored)
        try harness.engine.setOnline(true, token: token)
        #expect(harness.engine.waitUntilSettled(token: token))
        #expect(harness.status(id) == .extensionRunning)
        #expect(runner.calls == 1)
    }

    /// A device pushed without pause may never be idle: the wait ends once a few of its batches came back from the
    /// store (its change's records are in one of them), long before the time bound.
    @Test func busyDeviceIsWaitedForAFewBatchesNotTheBound() throws {
        // Completions on a queue of their own, as from a store's writer thread, which takes a millisecond a commit:
        // with a push every half millisecond the device always has a save in flight, without a core spinning.
        let writer = DispatchQueue(label: "writer")
        let harness = DeliveryHarness(configure: {
            $0.runsCallbacksInline = false
            $0.settleTimeoutMilliseconds = 30_000
        }, online: false, completionQueue: writer)
        let stop = Locked(false)
        let pushed = Locked(0)
        DispatchQueue.global().async {
            // Another app's pushes: the one checked below is not coalesced away by them.
            while !stop.withLock({ $0 }) {
                writer.async { usleep(1000) }
                harness.push(bundleID: "com.example.b")
                pushed.withLock { $0 += 1 }
                usleep(500)
            }
        }
        defer { stop.withLock { $0 = true } }
        while pushed.withLock({ $0 }) < 20 { usleep(1000) }
        let id = storedPush(harness)
        try harness.engine.setOnline(true, token: token)
        let started = DispatchTime.now()
        #expect(harness.engine.waitUntilSettled(token: token))
        let waited = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
        #expect(waited < 10_000, "waited \(waited) ms")
        #expect(harness.status(id) != .stored)
    }

    /// A device the engine holds no slot for has nothing in flight: no wait.
    @Test func unknownDeviceIsSettled() {
        let harness = asyncHarness(timeoutMilliseconds: 60_000)
        #expect(harness.engine.waitUntilSettled(token: String(repeating: "cd", count: 32)))
        #expect(harness.engine.waitUntilAllSettled())
    }
}
