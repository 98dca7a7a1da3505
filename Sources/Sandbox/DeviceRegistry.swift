// APNs Sandbox — which apps and devices exist, and whether a push may reach one.
import APNsProtocol
import Synchronization

/// Apps and devices, in memory, safe from any thread.
///
/// `resolve` answers the question APNs asks for every push: is this token a device of this
/// environment with this app installed? Unknown tokens either become devices (auto-register,
/// the quick-start default) or are rejected (`BadDeviceToken`, strict mode).
public final class DeviceRegistry: Sendable {
    /// How unknown tokens are treated.
    public enum UnknownTokenPolicy: String, Sendable, Codable, CaseIterable {
        /// The first push creates a device with the topic's app installed.
        case autoRegister
        /// Unknown tokens get 400 `BadDeviceToken`.
        case strict
    }

    /// Devices are split over shards by token so pushes on different event loops rarely wait
    /// for each other's lock.
    private final class Shard: Sendable {
        let devices = Mutex(DeviceTable())
    }

    private static let shardCount = 16
    private let shards: [Shard] = (0..<DeviceRegistry.shardCount).map { _ in Shard() }
    private let appTable = Mutex<[String: App]>([:])
    /// Boxed: a closure kept directly in a `Mutex` is re-wrapped in reabstraction thunks on every
    /// `withLock` access, so the chain (and the stack depth of a call) grew with every new device.
    private let autoRegisterHandler = Mutex<AutoRegisterHandler?>(nil)
    public let unknownTokenPolicy: UnknownTokenPolicy

    public init(unknownTokenPolicy: UnknownTokenPolicy = .autoRegister) {
        self.unknownTokenPolicy = unknownTokenPolicy
    }

    private func shard(for token: DeviceToken) -> Shard {
        shards[Int(UInt(bitPattern: token.hashValue) % UInt(Self.shardCount))]
    }

    // MARK: Apps

    /// Adds or replaces an app.
    public func upsert(_ app: App) {
        appTable.withLock { $0[app.bundleID] = app }
    }

    public func app(bundleID: String) -> App? {
        appTable.withLock { $0[bundleID] }
    }

    public var apps: [App] {
        appTable.withLock { Array($0.values) }.sorted { $0.bundleID < $1.bundleID }
    }

    /// Removes the apps `selected` picks and adds `apps`, in one step (a reset of the sandbox).
    public func replaceApps(where selected: (App) -> Bool, with apps: [App]) {
        appTable.withLock { table in
            table = table.filter { !selected($0.value) }
            for app in apps { table[app.bundleID] = app }
        }
    }

    // MARK: Devices

    /// Adds or replaces a device.
    public func upsert(_ device: Device) {
        shard(for: device.token).devices.withLock { $0[device.token] = device }
    }

    /// Makes room for `count` devices in all (before loading them at start: growing a table of a million
    /// devices step by step rehashed every token about twice).
    public func reserveDeviceCapacity(_ count: Int) {
        let perShard = count / Self.shardCount + count / Self.shardCount / 8 + 16
        for shard in shards { shard.devices.withLock { $0.reserveCapacity(perShard) } }
    }

    /// Called for every device created by auto-registration, under the lock of the device's shard, before any
    /// other push can see the device: a push to the same token on another thread cannot get ahead of the
    /// registration (it must be committed no later than any push to the device). `handler` must be quick
    /// (queue the write, do not wait for it) and must not call back into the registry.
    public func onAutoRegister(_ handler: @escaping @Sendable (Device) -> Void) {
        let box = AutoRegisterHandler(handler)
        autoRegisterHandler.withLock { $0 = box }
    }

    /// Forgets `device` if the registry still holds exactly it (an auto-registered device whose write failed:
    /// the next push to its token registers it again, instead of finding a device the store never got).
    public func forget(_ device: Device) {
        shard(for: device.token).devices.withLock { devices in
            if devices[device.token] == device { devices[device.token] = nil }
        }
    }

    /// Forgets a device.
    public func remove(token: DeviceToken) {
        shard(for: token).devices.withLock { $0[token] = nil }
    }

    /// Removes the devices `selected` picks and adds `devices`, shard by shard, each shard in one step under
    /// its lock (a reset of the sandbox: a push never finds a device of the configuration missing meanwhile).
    public func replaceDevices(where selected: (Device) -> Bool, with devices: [Device]) {
        var byShard: [ObjectIdentifier: [Device]] = [:]
        for device in devices { byShard[ObjectIdentifier(shard(for: device.token)), default: []].append(device) }
        for shard in shards {
            shard.devices.withLock { table in
                table.removeAll(where: selected)
                for device in byShard[ObjectIdentifier(shard)] ?? [] { table[device.token] = device }
            }
        }
    }

    public func device(token: DeviceToken) -> Device? {
        shard(for: token).devices.withLock { $0[token] }
    }

    public var deviceCount: Int { shards.reduce(0) { count, shard in count + shard.devices.withLock { $0.count } } }

    /// Marks `bundleID` uninstalled on the device at `time` (ms); later pushes get 410.
    /// - Returns: false when the device or app is unknown.
    @discardableResult
    public func uninstall(bundleID: String, from token: DeviceToken, at time: Int64) -> Bool {
        shard(for: token).devices.withLock { $0.uninstall(bundleID: bundleID, from: token, at: time) }
    }

    /// Decides whether a push for `bundleID` in `environment` may go to `token`.
    ///
    /// - Unknown token: auto-registered (with the app installed) or `BadDeviceToken`.
    /// - A device of the other environment: `BadDeviceToken` (as APNs answers a sandbox token
    ///   sent to production).
    /// - The app is not on the device: `DeviceTokenNotForTopic`.
    /// - The app was uninstalled: 410 `Unregistered` with the uninstall time.
    /// - Returns: nil when the push may go (the device is known, or was registered now), else the error.
    public func resolve(
        token: DeviceToken, environment: APNsEnvironment, bundleID: String, now: Int64
    ) -> APNsError? {
        shard(for: token).devices.withLock { devices in
            switch devices.admit(token, environment: environment, bundleID: bundleID, now: now) {
            case .admitted: return nil
            case .refused(let error): return error
            case .unknownToken: break
            }
            guard unknownTokenPolicy == .autoRegister else { return APNsError(.badDeviceToken) }
            let newDevice = Device(
                token: token, environment: environment,
                apps: [InstalledApp(bundleID: bundleID, installedAt: now)], isAutoRegistered: true)
            devices[token] = newDevice
            // Only new tokens take the handler's lock (lock order: shard, then handler).
            autoRegisterHandler.withLock { $0 }?.call(newDevice)
            return nil
        }
    }

    /// ``resolve(token:environment:bundleID:now:)`` without its side effect: an unknown token is not
    /// registered (nil for one that would be auto-registered).
    public func check(token: DeviceToken, environment: APNsEnvironment, bundleID: String, now: Int64) -> APNsError? {
        shard(for: token).devices.withLock { devices in
            switch devices.admit(token, environment: environment, bundleID: bundleID, now: now) {
            case .admitted: return nil
            case .refused(let error): return error
            case .unknownToken: return unknownTokenPolicy == .autoRegister ? nil : APNsError(.badDeviceToken)
            }
        }
    }
}

/// The auto-registration callback, held by reference.
private final class AutoRegisterHandler: Sendable {
    private let handler: @Sendable (Device) -> Void

    init(_ handler: @escaping @Sendable (Device) -> Void) {
        self.handler = handler
    }

    func call(_ device: Device) { handler(device) }
}
