// APNs Sandbox — the engine under real threads: dispatch hops, a writer-thread store, the system clock.
import APNsProtocol
import Dispatch
import Sandbox
import Synchronization
import Testing
import Support

@Suite struct DeliveryConcurrencyTests {
    /// Pushes from many threads to several devices all reach `displayed`; each record's changes are announced
    /// in lifecycle order, and every provider completion runs once, after the commit.
    @Test func concurrentPushesAllReachAFinalStatusInOrder() throws {
        let devices = 4
        let threads = 8
        let perThread = 50
        let total = threads * perThread
        let writer = DispatchQueue(label: "fake-store-writer")
        let notifications = FakeNotificationRepository(completionQueue: writer)
        let finished = DispatchSemaphore(value: 0)
        let log = ChangeLog()
        var configuration = DeliveryEngine.Configuration()
        configuration.lowPriorityDelayMilliseconds = 5
        let clock = SystemClock()
        let engine = DeliveryEngine(
            configuration: configuration, clock: clock, notifications: notifications,
            devices: FakeDeviceRepository(),
            onChange: { record in
                log.append(record)
                if record.status.isFinal { finished.signal() }
            })
        let completions = Locked(0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let token = String(repeating: String(format0x(thread % devices)), count: 64)
                let record = NotificationRecord(
                    apnsID: "t\(thread)-\(index)", deviceToken: token, bundleID: "com.example.a",
                    topic: "com.example.a", priority: index % 2 == 0 ? 10 : 5,
                    payload: #"{"aps":{"alert":"n"}}"#, receivedAt: clock.nowMilliseconds)
                engine.accept(record) { result in
                    if case .success = result { completions.withLock { $0 += 1 } }
                }
            }
        }
        for _ in 0..<total {
            #expect(finished.wait(timeout: .now() + 10) == .success)
        }
        #expect(completions.withLock { $0 } == total)
        let changes = log.withLock { $0 }
        let byRecord = Dictionary(grouping: changes, by: \.apnsID)
        #expect(byRecord.count == total)
        for (_, versions) in byRecord {
            let statuses = versions.map(\.status)
            #expect(statuses == [.accepted, .delivering, .displayed]
                || statuses == [.accepted, .accepted, .delivering, .displayed])
            #expect(notifications.record(versions[0].apnsID)?.status == .displayed)
        }
    }
}

extension DeliveryConcurrencyTests {
    /// Many threads pushing to one device (each push delivered in its acceptance commit, the device's
    /// next batch handed to the store before the previous one's notifications run): observers get the
    /// device's changes exactly in commit order.
    @Test func oneDeviceAnnouncesChangesInCommitOrder() throws {
        let threads = 8
        let perThread = 200
        let total = threads * perThread
        let notifications = FakeNotificationRepository(completionQueue: DispatchQueue(label: "fake-store-writer"))
        let finished = DispatchSemaphore(value: 0)
        let log = ChangeLog()
        let clock = SystemClock()
        let engine = DeliveryEngine(
            clock: clock, notifications: notifications, devices: FakeDeviceRepository(),
            onChange: { record in
                log.append(record)
                if record.status.isFinal { finished.signal() }
            })
        let token = String(repeating: "c", count: 64)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let record = NotificationRecord(
                    apnsID: "t\(thread)-\(index)", deviceToken: token, bundleID: "com.example.a",
                    topic: "com.example.a", payload: #"{"aps":{"alert":"n"}}"#, receivedAt: clock.nowMilliseconds)
                engine.accept(record) { _ in }
            }
        }
        for _ in 0..<total {
            #expect(finished.wait(timeout: .now() + 10) == .success)
        }
        let announced = log.withLock { $0.map { "\($0.apnsID) \($0.status.rawValue)" } }
        let committed = notifications.committedVersions.map { "\($0.apnsID) \($0.status.rawValue)" }
        #expect(announced.count == 3 * total)
        #expect(announced == committed)
    }
}

private func format0x(_ value: Int) -> Character {
    Array("0123456789abcdef")[value & 15]
}
