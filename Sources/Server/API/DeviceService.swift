// APNs Sandbox — one place that changes devices: the provider's registry, the store, the engine.
import APNsProtocol
import Dispatch
import Foundation
import Sandbox
import Support
import Synchronization

/// Keeps the in-memory `DeviceRegistry` (read by every push) and the durable `DeviceRepository`
/// (read by the delivery engine) in step, and tells the engine about online/offline and uninstalls.
final class DeviceService: Sendable {
    let registry: DeviceRegistry
    let devices: any DeviceRepository
    let engine: DeliveryEngine
    let clock: any SandboxClock
    /// Where `device.updated` events go (nil: none).
    let events: EventRecorder?
    /// Where failed writes of auto-registered devices are reported (nil: nowhere).
    let logger: Logger?
    /// Serialises read-modify-write of device records.
    private let lock = Mutex(())

    init(
        registry: DeviceRegistry, devices: any DeviceRepository, engine: DeliveryEngine, clock: any SandboxClock,
        events: EventRecorder? = nil, logger: Logger? = nil
    ) {
        self.logger = logger
        self.registry = registry
        self.devices = devices
        self.engine = engine
        self.clock = clock
        self.events = events
    }

    private func announce(_ change: String, token: String, device: DeviceRecord?) {
        events?.append(EventRecorder.deviceUpdated(change, token: token, device: device, at: clock.nowMilliseconds))
    }

    /// Loads stored devices into the registry (at start).
    func loadRegistry() throws {
        var offset = 0
        while true {
            let page = try devices.devices(limit: 1000, offset: offset)
            for record in page {
                if let device = Self.device(from: record) { registry.upsert(device) }
            }
            if page.count < 1000 { break }
            offset += page.count
        }
    }

    /// Persists a device the provider endpoint auto-registered, on the push's own path and without
    /// waiting: the write (and its `device.updated` event) is queued ahead of the push's save, so it
    /// commits in the same group commit or an earlier one, and every API call after the push's 200
    /// finds the device. Called under the registry's shard lock (``DeviceRegistry/onAutoRegister(_:)``):
    /// it takes no lock of this service.
    func autoRegistered(_ device: Device) {
        let record = Self.record(from: device, online: true, createdAt: clock.nowMilliseconds)
        let registry = self.registry
        devices.registerDevice(record) { [logger] result in
            guard case .failure(let error) = result else { return }
            logger?.warning("storing an auto-registered device failed; the next push to it registers it again", [
                ("device.token_prefix", String(record.token.prefix(8))), ("error", "\(error)"),
            ])
            // Not here: a write refused at once completes under the registry's shard lock (see above).
            DispatchQueue.global().async { registry.forget(device) }
        }
        announce("auto-registered", token: record.token, device: record)
    }

    /// Creates a device unless one with its token exists (checked and written under one lock, so two
    /// concurrent creations of a token cannot both succeed). - Returns: false when it existed.
    func create(_ record: DeviceRecord) throws -> Bool {
        let created = try lock.withLock { _ -> Bool in
            guard try devices.device(token: record.token) == nil else { return false }
            try devices.saveDevice(record)
            if let device = Self.device(from: record) { registry.upsert(device) }
            return true
        }
        if created { announce("created", token: record.token, device: record) }
        return created
    }

    /// Creates or replaces a device (API and config seeding).
    func save(_ record: DeviceRecord) throws {
        let existed = try lock.withLock { _ in
            let existed = try devices.device(token: record.token) != nil
            try devices.saveDevice(record)
            if let device = Self.device(from: record) { registry.upsert(device) }
            return existed
        }
        announce(existed ? "updated" : "created", token: record.token, device: record)
    }

    func update(token: String, _ change: (inout DeviceRecord) throws -> Void) throws -> DeviceRecord {
        let result: Result<(DeviceRecord, DeviceRecord), APIError> = lock.withLock { _ in
            do {
                guard var record = try devices.device(token: token) else {
                    return .failure(APIError(status: 404, code: "not_found", message: "No device \(token)"))
                }
                let before = record
                try change(&record)
                try devices.saveDevice(record)
                if let device = Self.device(from: record) { registry.upsert(device) }
                return .success((before, record))
            } catch let error as APIError {
                return .failure(error)
            } catch {
                return .failure(APIError(status: 500, code: "store_error", message: "\(error)"))
            }
        }
        let (before, after) = try result.get()
        if before != after { announce("updated", token: token, device: after) }
        do {
            for app in after.apps where app.uninstalledAt != nil {
                if before.apps.first(where: { $0.bundleID == app.bundleID })?.uninstalledAt == nil {
                    try engine.uninstall(bundleID: app.bundleID, token: token)
                }
            }
            if before.isOnline != after.isOnline { try engine.setOnline(after.isOnline, token: token) }
        } catch {
            throw APIError(status: 500, code: "store_error", message: "\(error)")
        }
        return after
    }

    func delete(token: String) throws -> Bool {
        let deleted = try lock.withLock { _ in
            let deleted = try devices.deleteDevice(token: token)
            if let parsed = DeviceToken(hex: token) { registry.remove(token: parsed) }
            return deleted
        }
        if deleted { announce("deleted", token: token, device: nil) }
        return deleted
    }

    /// nil for a stored token that is not valid hex (never written by the sandbox itself).
    static func device(from record: DeviceRecord) -> Device? {
        guard let token = DeviceToken(hex: record.token) else { return nil }
        return Device(
            token: token,
            environment: record.environment, locale: record.locale,
            apps: record.apps.map { InstalledApp(bundleID: $0.bundleID, installedAt: $0.installedAt, uninstalledAt: $0.uninstalledAt) },
            isAutoRegistered: record.isAutoRegistered)
    }

    static func record(from device: Device, online: Bool, createdAt: Int64) -> DeviceRecord {
        DeviceRecord(
            token: device.token.hex, environment: device.environment, locale: device.locale, isOnline: online,
            apps: device.apps.values.sorted { $0.bundleID < $1.bundleID }.map {
                InstalledAppRecord(bundleID: $0.bundleID, installedAt: $0.installedAt, uninstalledAt: $0.uninstalledAt)
            },
            createdAt: createdAt, isAutoRegistered: device.isAutoRegistered)
    }
}
