// APNs Sandbox — MemoryStore as the DeviceRepository (devices and apps, unbounded).
import Sandbox

extension MemoryStore: DeviceRepository {
    public func saveDevice(_ device: DeviceRecord) throws {
        try write { state in state.devices.set(device, for: device.token) }
    }

    /// Adds `device` unless its token is known; reads see it at once; `completion` (on the store's queue,
    /// in order with the saves) says whether it was added.
    public func registerDevice(_ device: DeviceRecord, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        let outcome = Result {
            try withOpenState { state in
                let added = state.devices[device.token] == nil
                if added { state.devices.set(device, for: device.token) }
                return enqueueCallback(in: &state, events: []) { completion(.success(added)) }
            }
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
        try write({ state in
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
        try withOpenState { $0.devices[token] }
    }

    public func devices(limit: Int, offset: Int) throws -> [DeviceRecord] {
        try withOpenState { $0.devices.page(limit: limit, offset: max(offset, 0)) }
    }

    @discardableResult
    public func deleteDevice(token: String) throws -> Bool {
        try write { state in state.devices.remove(token) != nil }
    }

    public func saveApp(_ app: AppRecord) throws {
        try write { state in state.apps[app.bundleID] = app }
    }

    public func app(bundleID: String) throws -> AppRecord? {
        try withOpenState { $0.apps[bundleID] }
    }

    /// Every app, by bundle ID.
    public func apps() throws -> [AppRecord] {
        try withOpenState { state in state.apps.values.sorted { $0.bundleID < $1.bundleID } }
    }

    @discardableResult
    public func deleteApp(bundleID: String) throws -> Bool {
        try write { state in state.apps.removeValue(forKey: bundleID) != nil }
    }
}
