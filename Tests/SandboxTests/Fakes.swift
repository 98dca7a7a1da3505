// APNs Sandbox — in-memory repositories for delivery tests.
import APNsProtocol
import Dispatch
import Sandbox
import Synchronization
import Support

/// A fake repository failure.
struct FakeStoreError: Error, Equatable {}

/// Notifications in memory. Saves commit at once, or — with `isHoldingSaves` — only when the test calls
/// ``completeHeldSaves()``, which lets a test look between a save and its commit.
final class FakeNotificationRepository: NotificationRepository {
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    private struct State {
        /// Keyed like the store: an apns-id on a device (``FakeNotificationRepository/key(_:)``).
        var records: [String: NotificationRecord] = [:]
        /// Insertion order per notification (first save).
        var inserted: [String: Int] = [:]
        var nextInsert = 0
        /// Every committed batch, in commit order.
        var committedBatches: [[NotificationRecord]] = []
        var isHoldingSaves = false
        var held: [([NotificationRecord], [EventDraft], Completion)] = []
        /// Every committed event, in commit order.
        var events: [EventDraft] = []
        /// The next this many saves fail.
        var failuresToInject = 0
    }

    private let state = Locked(State())
    /// When set, completions run on this queue (like a store's writer thread) instead of the caller's.
    private let completionQueue: DispatchQueue?

    init(records: [NotificationRecord] = [], completionQueue: DispatchQueue? = nil) {
        self.completionQueue = completionQueue
        state.withLock { state in
            for record in records { Self.commit([record], into: &state) }
            state.committedBatches = []
        }
    }

    var isHoldingSaves: Bool {
        get { state.withLock { $0.isHoldingSaves } }
        set { state.withLock { $0.isHoldingSaves = newValue } }
    }

    /// Makes the next `count` saves fail with ``FakeStoreError``.
    func failNextSaves(_ count: Int) {
        state.withLock { $0.failuresToInject = count }
    }

    var heldSaveCount: Int { state.withLock { $0.held.count } }

    /// Every committed version of every record, in commit order.
    var committedVersions: [NotificationRecord] { state.withLock { $0.committedBatches.flatMap { $0 } } }

    /// Every committed batch (one per save call), in commit order.
    var committedBatches: [[NotificationRecord]] { state.withLock { $0.committedBatches } }

    /// Every event saved with the records, in commit order.
    var committedEvents: [EventDraft] { state.withLock { $0.events } }

    /// Commits the held saves (and any saves they trigger, until none is held). Returns how many ran.
    @discardableResult
    func completeHeldSaves() -> Int {
        var count = 0
        while let (records, completion) = state.withLock({ state -> ([NotificationRecord], Completion)? in
            guard !state.held.isEmpty else { return nil }
            let first = state.held.removeFirst()
            Self.commit(first.0, into: &state)
            state.events += first.1
            return (first.0, first.2)
        }) {
            _ = records
            count += 1
            completion(.success(()))
        }
        return count
    }

    /// Commits only the oldest held save (what it triggers is held too, while holding); false when none was.
    @discardableResult
    func completeFirstHeldSave() -> Bool {
        guard let completion = state.withLock({ state -> Completion? in
            guard !state.held.isEmpty else { return nil }
            let first = state.held.removeFirst()
            Self.commit(first.0, into: &state)
            state.events += first.1
            return first.2
        }) else { return false }
        completion(.success(()))
        return true
    }

    /// Fails the oldest held save (nothing of it is committed); false when none was held.
    @discardableResult
    func failFirstHeldSave() -> Bool {
        guard let completion = state.withLock({ state -> Completion? in
            guard !state.held.isEmpty else { return nil }
            return state.held.removeFirst().2
        }) else { return false }
        completion(.failure(FakeStoreError()))
        return true
    }

    /// Every committed record, newest version of each: what a restart would find in the store.
    var committedRecords: [NotificationRecord] {
        state.withLock { state in
            state.records.sorted { state.inserted[$0.key, default: 0] < state.inserted[$1.key, default: 0] }.map(\.value)
        }
    }

    /// The newest saved notification with this apns-id (on any device).
    func record(_ apnsID: String) -> NotificationRecord? {
        state.withLock { state in
            state.records.filter { $0.value.apnsID == apnsID }
                .max { state.inserted[$0.key, default: 0] < state.inserted[$1.key, default: 0] }?.value
        }
    }

    static func key(_ record: NotificationRecord) -> String { record.apnsID + "|" + record.deviceToken }

    private static func commit(_ records: [NotificationRecord], into state: inout State) {
        for record in records {
            if state.inserted[key(record)] == nil {
                state.inserted[key(record)] = state.nextInsert
                state.nextInsert += 1
            }
            state.records[key(record)] = record
        }
        state.committedBatches.append(records)
    }

    // MARK: NotificationRepository

    func save(_ records: [NotificationRecord], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        save(records, events: [], completion: completion)
    }

    func save(
        _ records: [NotificationRecord], events: [EventDraft],
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        enum Next { case fail, hold, commit }
        let next = state.withLock { state -> Next in
            if state.failuresToInject > 0 {
                state.failuresToInject -= 1
                return .fail
            }
            if state.isHoldingSaves {
                state.held.append((records, events, completion))
                return .hold
            }
            Self.commit(records, into: &state)
            state.events += events
            return .commit
        }
        let result: Result<Void, any Error>
        switch next {
        case .fail: result = .failure(FakeStoreError())
        case .hold: return
        case .commit: result = .success(())
        }
        if let completionQueue {
            completionQueue.async { completion(result) }
        } else {
            completion(result)
        }
    }

    func notification(apnsID: String, deviceToken: String?) throws -> NotificationRecord? {
        guard let deviceToken else { return record(apnsID) }
        return state.withLock { $0.records[apnsID + "|" + deviceToken] }
    }

    func notifications(matching filter: NotificationFilter, limit: Int, offset: Int) throws -> [NotificationRecord] {
        let all = state.withLock { state in
            state.records.values.filter { Self.matches($0, filter) }.sorted { lhs, rhs in
                if lhs.receivedAt != rhs.receivedAt { return lhs.receivedAt > rhs.receivedAt }
                return state.inserted[Self.key(lhs), default: 0] > state.inserted[Self.key(rhs), default: 0]
            }
        }
        return Array(all.dropFirst(offset).prefix(limit))
    }

    func count(matching filter: NotificationFilter) throws -> Int {
        try notifications(matching: filter, limit: .max, offset: 0).count
    }

    /// The fake has no cursor (its records carry none): every `after` filter is ignored.
    func latestCursor() throws -> Int64 { 0 }

    func unfinished() throws -> [NotificationRecord] {
        let all = try notifications(matching: NotificationFilter(), limit: .max, offset: 0)
        return all.filter { !$0.status.isFinal }.reversed()
    }

    func deleteNotifications(matching filter: NotificationFilter) throws -> [NotificationKey] {
        state.withLock { state in
            let doomed = state.records.values.filter { Self.matches($0, filter) }
            for record in doomed { state.records[Self.key(record)] = nil }
            return doomed.map { NotificationKey(apnsID: $0.apnsID, deviceToken: $0.deviceToken) }
        }
    }

    func prune(maxRecords: Int, olderThan cutoff: Int64) throws -> Int { 0 }

    private static func matches(_ record: NotificationRecord, _ filter: NotificationFilter) -> Bool {
        (filter.deviceToken.map { $0 == record.deviceToken } ?? true)
            && (filter.topic.map { $0 == record.topic } ?? true)
            && (filter.bundleID.map { $0 == record.bundleID } ?? true)
            && (filter.status.map { $0 == record.status } ?? true)
            && (filter.statuses.map { $0.contains(record.status) } ?? true)
            && (filter.since.map { record.receivedAt >= $0 } ?? true)
    }
}

/// Devices and apps in memory.
final class FakeDeviceRepository: DeviceRepository {
    private let devicesByToken = Locked<[String: DeviceRecord]>([:])
    private let appsByID = Locked<[String: AppRecord]>([:])

    init(devices: [DeviceRecord] = [], apps: [AppRecord] = []) {
        for device in devices { devicesByToken.withLock { $0[device.token] = device } }
        for app in apps { appsByID.withLock { $0[app.bundleID] = app } }
    }

    func saveDevice(_ device: DeviceRecord) throws { devicesByToken.withLock { $0[device.token] = device } }
    func registerDevice(_ device: DeviceRecord, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        let added = devicesByToken.withLock { devices -> Bool in
            guard devices[device.token] == nil else { return false }
            devices[device.token] = device
            return true
        }
        completion(.success(added))
    }
    func modifyDevice(
        token: String, _ change: @escaping @Sendable (DeviceRecord?) throws -> DeviceChange,
        committed: @escaping @Sendable (DeviceRecord?, DeviceRecord?) -> Void
    ) throws -> DeviceModification {
        try devicesByToken.withLock { devices in
            let before = devices[token]
            switch try change(before) {
            case .keep: break
            case .save(let record): devices[token] = record
            case .delete: devices[token] = nil
            }
            committed(before, devices[token])
            return DeviceModification(before: before, after: devices[token])
        }
    }
    func device(token: String) throws -> DeviceRecord? { devicesByToken.withLock { $0[token] } }
    func devices(limit: Int, offset: Int) throws -> [DeviceRecord] {
        let all = devicesByToken.withLock { Array($0.values) }.sorted { $0.token < $1.token }
        return Array(all.dropFirst(offset).prefix(limit))
    }
    func deviceCountBound() throws -> Int { devicesByToken.withLock { $0.count } }
    func forEachDevice(_ body: (DeviceRecord) throws -> Void) throws {
        for device in devicesByToken.withLock({ Array($0.values) }).sorted(by: { $0.token < $1.token }) { try body(device) }
    }
    func deleteDevice(token: String) throws -> Bool { devicesByToken.withLock { $0.removeValue(forKey: token) != nil } }
    func saveApp(_ app: AppRecord) throws { appsByID.withLock { $0[app.bundleID] = app } }
    func app(bundleID: String) throws -> AppRecord? { appsByID.withLock { $0[bundleID] } }
    func apps() throws -> [AppRecord] { appsByID.withLock { Array($0.values) } }
}
