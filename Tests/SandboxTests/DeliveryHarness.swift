// APNs Sandbox — a delivery engine wired to a manual clock and in-memory repositories.
import APNsProtocol
import Dispatch
import Sandbox
import Synchronization
import Support

/// One device with installed apps, an engine that runs everything on the test's thread, and what it reported.
final class DeliveryHarness: Sendable {
    static let token = String(repeating: "ab", count: 32)
    static let start: Int64 = 1_700_000_000_000

    let clock = ManualClock(nowMilliseconds: DeliveryHarness.start)
    let notifications: FakeNotificationRepository
    let devices: FakeDeviceRepository
    let engine: DeliveryEngine
    let changes: ChangeLog
    private let counter = Locked(0)

    init(
        configure: (inout DeliveryEngine.Configuration) -> Void = { _ in },
        online: Bool = true, locale: String = "en_US", apps: [String] = ["com.example.a", "com.example.b"],
        appRecords: [AppRecord] = [], existing: [NotificationRecord] = [],
        runner: (any ServiceExtensionRunner)? = nil, completionQueue: DispatchQueue? = nil
    ) {
        var configuration = DeliveryEngine.Configuration()
        configuration.runsCallbacksInline = true
        configure(&configuration)
        notifications = FakeNotificationRepository(records: existing, completionQueue: completionQueue)
        devices = FakeDeviceRepository(
            devices: [DeviceRecord(
                token: Self.token, environment: .development, locale: locale, isOnline: online,
                apps: apps.map { InstalledAppRecord(bundleID: $0, installedAt: Self.start - 1000) })],
            apps: appRecords)
        let changes = ChangeLog()
        self.changes = changes
        engine = DeliveryEngine(
            configuration: configuration, clock: clock, notifications: notifications, devices: devices,
            serviceExtensionRunner: runner, onChange: { record in changes.append(record) })
    }

    /// A record as the provider endpoint would hand it over.
    func makeRecord(
        _ apnsID: String? = nil, bundleID: String = "com.example.a", payload: String = #"{"aps":{"alert":"Hi"}}"#,
        priority: Int = 10, expiration: Int64? = nil, collapseID: String? = nil, pushType: String? = nil
    ) -> NotificationRecord {
        let number = counter.withLock { value in
            value += 1
            return value
        }
        return NotificationRecord(
            apnsID: apnsID ?? "push-\(number)", deviceToken: Self.token, bundleID: bundleID, topic: bundleID,
            pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID,
            payload: payload, receivedAt: clock.nowMilliseconds)
    }

    /// Accepts a push; returns its apns-id and a box that holds the completion's result once it ran.
    @discardableResult
    func push(
        _ apnsID: String? = nil, bundleID: String = "com.example.a", payload: String = #"{"aps":{"alert":"Hi"}}"#,
        priority: Int = 10, expiration: Int64? = nil, collapseID: String? = nil, pushType: String? = nil
    ) -> (apnsID: String, completion: CompletionBox) {
        let record = makeRecord(apnsID, bundleID: bundleID, payload: payload, priority: priority,
                                expiration: expiration, collapseID: collapseID, pushType: pushType)
        let box = CompletionBox()
        engine.accept(record) { result in box.set(result) }
        return (record.apnsID, box)
    }

    /// A silent background push (`content-available: 1`, push type background, priority 5).
    @discardableResult
    func backgroundPush(_ apnsID: String? = nil, bundleID: String = "com.example.a") -> String {
        push(apnsID, bundleID: bundleID, payload: #"{"aps":{"content-available":1},"k":1}"#, priority: 5,
             pushType: "background").apnsID
    }

    func status(_ apnsID: String) -> NotificationStatus? {
        notifications.record(apnsID)?.status
    }

    func record(_ apnsID: String) -> NotificationRecord? {
        notifications.record(apnsID)
    }

    func steps(_ apnsID: String) -> [String] {
        record(apnsID)?.timeline.map(\.step) ?? []
    }

    func center() throws -> NotificationCenterView {
        try engine.notificationCenter(token: Self.token)
    }

    func device() -> DeviceRecord? {
        try? devices.device(token: Self.token)
    }
}

/// Where an acceptance completion leaves its result.
final class CompletionBox: Sendable {
    private let result = Locked<Result<Void, any Error>?>(nil)
    private let calls = Locked(0)

    func set(_ value: Result<Void, any Error>) {
        result.withLock { $0 = value }
        calls.withLock { $0 += 1 }
    }

    var callCount: Int { calls.withLock { $0 } }
    var succeeded: Bool { result.withLock { if case .success? = $0 { true } else { false } } }
    var failed: Bool { result.withLock { if case .failure? = $0 { true } else { false } } }
}

/// The records `onChange` announced, in order.
final class ChangeLog: Sendable {
    private let records = Locked<[NotificationRecord]>([])

    func append(_ record: NotificationRecord) { records.withLock { $0.append(record) } }
    func withLock<T>(_ body: ([NotificationRecord]) -> T) -> T { records.withLock { body($0) } }
}
