// APNs Sandbox — idle devices leave no slot behind in the engine, busy ones keep theirs, and a retired slot
// never loses a push.
import APNsProtocol
import Dispatch
import Glibc
import Sandbox
import Synchronization
import Testing
import Support

@Suite struct DeliverySlotTests {
    private func record(_ apnsID: String, token: String, receivedAt: Int64, payload: String = #"{"aps":{"alert":"Hi"}}"#,
                        priority: Int = 10, pushType: String? = nil) -> NotificationRecord {
        NotificationRecord(
            apnsID: apnsID, deviceToken: token, bundleID: "com.example.a", topic: "com.example.a", pushType: pushType,
            priority: priority, payload: payload, receivedAt: receivedAt)
    }

    /// 50 devices with one push each: every push displayed and no slot kept; the next push to one of them
    /// (a new slot) is displayed too.
    @Test func idleDevicesLeaveNoSlot() {
        let harness = DeliveryHarness(configure: { $0.idleSlotsKeptPerShard = 0 })
        let tokens = (0..<50).map { String(format: "%064x", $0 + 1) }
        for (index, token) in tokens.enumerated() {
            harness.engine.accept(record("p\(index)", token: token, receivedAt: harness.clock.nowMilliseconds)) { _ in }
        }
        #expect(tokens.indices.allSatisfy { harness.status("p\($0)") == .displayed })
        #expect(harness.engine.slotCount == 0)
        harness.engine.accept(record("again", token: tokens[0], receivedAt: harness.clock.nowMilliseconds)) { _ in }
        #expect(harness.status("again") == .displayed)
        #expect(harness.engine.slotCount == 0)
        // Events that save nothing let the slot they made go too.
        try? harness.engine.setOnline(true, token: DeliveryHarness.token)
        try? harness.engine.uninstall(bundleID: "com.example.b", token: DeliveryHarness.token)
        #expect(harness.engine.slotCount == 0)
    }

    /// A device with something pending keeps its slot: stored pushes of an offline device, a device set
    /// offline only in memory, a background budget; going online delivers and lets the slot go.
    @Test func busyDevicesKeepTheirSlot() throws {
        let harness = DeliveryHarness(configure: { $0.idleSlotsKeptPerShard = 0 }, online: false)
        let first = harness.push()
        #expect(harness.status(first.apnsID) == .stored)
        #expect(harness.engine.slotCount == 1)
        try harness.engine.setOnline(true, token: DeliveryHarness.token)
        #expect(harness.status(first.apnsID) == .displayed)
        #expect(harness.engine.slotCount == 0)

        let unknown = String(repeating: "cd", count: 32)
        try harness.engine.setOnline(false, token: unknown)
        #expect(harness.engine.slotCount == 1, "an unknown device offline in memory only")
        harness.engine.accept(record("held", token: unknown, receivedAt: harness.clock.nowMilliseconds)) { _ in }
        #expect(harness.status("held") == .stored)
        try harness.engine.setOnline(true, token: unknown)
        #expect(harness.status("held") == .displayed)
        #expect(harness.engine.slotCount == 0)

        let silent = harness.backgroundPush()
        #expect(harness.status(silent) == .deliveredSilent)
        #expect(harness.engine.slotCount == 1, "the hour's background budget is the slot's")
        harness.clock.advance(byMilliseconds: 3_600_001)
        let later = harness.push()
        #expect(harness.status(later.apnsID) == .displayed)
        #expect(harness.engine.slotCount == 0, "an hour on, the budget is spent and the slot goes")
    }

    /// Up to the number kept per shard, idle slots stay (a device pushed again reuses its own); past it they go.
    @Test func keepsSomeIdleSlotsPerShard() {
        let harness = DeliveryHarness(configure: { $0.idleSlotsKeptPerShard = 2 })
        let tokens = (0..<200).map { String(format: "%064x", $0 + 1) }
        for (index, token) in tokens.enumerated() {
            harness.engine.accept(record("p\(index)", token: token, receivedAt: harness.clock.nowMilliseconds)) { _ in }
        }
        #expect(tokens.indices.allSatisfy { harness.status("p\($0)") == .displayed })
        #expect((1...32).contains(harness.engine.slotCount), "at most 2 idle slots in each of 16 shards: \(harness.engine.slotCount)")
    }

    /// Many threads pushing to a few devices while their slots come and go: every push reaches `displayed`
    /// and every completion runs once.
    @Test func retiringUnderLoadLosesNothing() {
        let writer = DispatchQueue(label: "fake-store-writer")
        let notifications = FakeNotificationRepository(completionQueue: writer)
        let finished = DispatchSemaphore(value: 0)
        let clock = SystemClock()
        let log = ChangeLog()
        var configuration = DeliveryEngine.Configuration()
        configuration.idleSlotsKeptPerShard = 0
        let engine = DeliveryEngine(
            configuration: configuration, clock: clock, notifications: notifications, devices: FakeDeviceRepository(),
            onChange: { record in
                log.append(record)
                if record.status.isFinal { finished.signal() }
            })
        let completions = Locked(0)
        let threads = 8
        let perThread = 200
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let token = String(format: "%064x", (thread * perThread + index) % 6 + 1)
                engine.accept(record("t\(thread)-\(index)", token: token, receivedAt: clock.nowMilliseconds)) { result in
                    if case .success = result { completions.withLock { $0 += 1 } }
                }
                if index % 20 == 0 { usleep(200) }
            }
        }
        for _ in 0..<(threads * perThread) {
            #expect(finished.wait(timeout: .now() + 10) == .success)
        }
        #expect(completions.withLock { $0 } == threads * perThread)
        for thread in 0..<threads {
            for index in 0..<perThread {
                #expect(notifications.record("t\(thread)-\(index)")?.status == .displayed)
            }
        }
        // Each push announced once per state, in lifecycle order, whichever slot carried it.
        for (apnsID, versions) in Dictionary(grouping: log.withLock { $0 }, by: \.apnsID) {
            #expect(versions.map(\.status) == [.accepted, .delivering, .displayed], "\(apnsID)")
        }
        // The last retirements follow the last announcements (onChange runs before the slot is let go).
        var polls = 0
        while engine.slotCount > 0, polls < 500 {
            usleep(10_000)
            polls += 1
        }
        #expect(engine.slotCount == 0, "every device idle at the end")
    }
}
