// APNs Sandbox — one place that changes devices: the provider's registry, the store, the engine.
import APNsProtocol
import Dispatch
import Events
import Foundation
import Sandbox
import Support

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

    /// Creates a device unless one with its token exists (checked and written in one store step, so two
    /// concurrent creations of a token cannot both succeed). - Returns: false when it existed.
    func create(_ record: DeviceRecord) throws -> Bool {
        let change = try modify(record.token, { current in current == nil ? .save(record) : .keep },
                                announcing: { before, _ in before == nil ? "created" : nil })
        guard change.before == nil else { return false }
        // The engine may still know the token from an earlier device of it (deleted, or removed by a reset), with
        // that device's online state: the new device's state is the one that counts.
        try engine.setOnline(record.isOnline, token: record.token)
        // A device made again under a deleted one's token may find its stored pushes: answered once they moved on.
        engine.waitUntilSettled(token: record.token)
        return true
    }

    /// Creates or replaces a device (API and config seeding).
    func save(_ record: DeviceRecord) throws {
        try modify(record.token, { _ in .save(record) }, announcing: { before, _ in before != nil ? "updated" : "created" })
    }

    func update(token: String, _ change: @escaping @Sendable (inout DeviceRecord) throws -> Void) throws -> DeviceRecord {
        let modification = try modify(token, { current in
            guard var record = current else {
                throw ServiceError.notFound(kind: "device", id: token)
            }
            try change(&record)
            return record == current ? .keep : .save(record)
        }, announcing: { before, after in before != after ? "updated" : nil })
        // `change` threw for a missing device, so both are there.
        guard let before = modification.before, let after = modification.after else {
            throw ServiceError.notFound(kind: "device", id: token)
        }
        var toldEngine = false
        for app in after.apps where app.uninstalledAt != nil {
            if before.apps.first(where: { $0.bundleID == app.bundleID })?.uninstalledAt == nil {
                try engine.uninstall(bundleID: app.bundleID, token: token)
                toldEngine = true
            }
        }
        if before.isOnline != after.isOnline {
            try engine.setOnline(after.isOnline, token: token)
            toldEngine = true
        }
        // Answered once what the change set off has committed: stored pushes delivered or expired, an uninstalled
        // app's discarded (up to a service extension still running). A change the engine was not told of waits
        // for nothing.
        if toldEngine { engine.waitUntilSettled(token: token) }
        return after
    }

    func delete(token: String) throws -> Bool {
        try modify(token, { current in current == nil ? .keep : .delete },
                   announcing: { before, _ in before != nil ? "deleted" : nil }).before != nil
    }

    /// Read-modify-write of one device in the store, with no lock here: the store runs it as one writer
    /// step, and the registry and the `device.updated` event (`announcing` names the change, nil: none)
    /// follow each commit in commit order (on the writer thread; logging an event only queues it).
    @discardableResult
    private func modify(
        _ token: String, _ change: @escaping @Sendable (DeviceRecord?) throws -> DeviceChange,
        announcing: @escaping @Sendable (_ before: DeviceRecord?, _ after: DeviceRecord?) -> String?
    ) throws -> DeviceModification {
        let registry = self.registry
        return try devices.modifyDevice(token: token, change) { [self] before, after in
            if let after {
                if let device = Self.device(from: after) { registry.upsert(device) }
            } else if let parsed = DeviceToken(hex: token) {
                registry.remove(token: parsed)
            }
            if let name = announcing(before, after) { announce(name, token: token, device: after) }
        }
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
