// APNs Sandbox — MemoryStore as the DeviceRepository (devices and apps, unbounded).
import Sandbox

extension MemoryStore: DeviceRepository {
    public func saveDevice(_ device: DeviceRecord) throws {
        try writeDirectory { $0.devices.set(device, for: device.token) }
    }

    /// Adds `device` unless its token is known; reads see it at once; `completion` (on the store's queue,
    /// in order with the saves) says whether it was added.
    public func registerDevice(_ device: DeviceRecord, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        let outcome = Result {
            let added = try withOpenDirectory { directory in
                let added = !directory.devices.contains(device.token)
                if added { directory.devices.set(device, for: device.token) }
                return added
            }
            return try withOpenState { state in enqueueCallback(in: &state, events: []) { completion(.success(added)) } }
        }
        switch outcome {
        case .success(let drain): scheduleDrain(drain)
        case .failure(let error): completion(.failure(error))
        }
    }

    public func modifyDevice(
        token: String, _ change: @escaping @Sendable (DeviceRecord?) throws -> DeviceChange,
        committed: @escaping @Sendable (_ before: DeviceRecord?, _ after: DeviceRecord?) -> Void
    ) throws -> DeviceModification {
        try writeDirectory({ state in
            let before = state.devices[token]
            switch try change(before) {
            case .keep:
                return DeviceModification(before: before, after: before)
            case .save(let record):
                precondition(record.token == token, "modifyDevice saves the device it read")
                state.devices.set(record, for: token)
                return DeviceModification(before: before, after: record)
            case .delete:
                state.devices.remove(token)
                return DeviceModification(before: before, after: nil)
            }
        }, committed: { committed($0.before, $0.after) })
    }

    public func device(token: String) throws -> DeviceRecord? {
        try withOpenDirectory { $0.devices[token] }
    }

    public func devices(limit: Int, offset: Int) throws -> [DeviceRecord] {
        try withOpenDirectory { $0.devices.page(limit: limit, offset: max(offset, 0)) }
    }

    public func forEachDevice(_ body: (DeviceRecord) throws -> Void) throws {
        for device in try withOpenDirectory({ $0.devices.all }) { try body(device) }
    }

    public func deviceCountBound() throws -> Int {
        try withOpenDirectory { $0.devices.count }
    }

    @discardableResult
    public func deleteDevice(token: String) throws -> Bool {
        try writeDirectory { $0.devices.remove(token) != nil }
    }

    public func saveApp(_ app: AppRecord) throws {
        try writeDirectory { $0.apps[app.bundleID] = app }
    }

    public func app(bundleID: String) throws -> AppRecord? {
        try withOpenDirectory { $0.apps[bundleID] }
    }

    /// Every app, by bundle ID.
    public func apps() throws -> [AppRecord] {
        try withOpenDirectory { state in state.apps.values.sorted { $0.bundleID < $1.bundleID } }
    }

    @discardableResult
    public func deleteApp(bundleID: String) throws -> Bool {
        try writeDirectory { $0.apps.removeValue(forKey: bundleID) != nil }
    }
}
