// APNs Sandbox — which apps and devices exist, and whether a push may reach one.
import APNsProtocol
import Dispatch
import Synchronization
import Support

/// Apps and devices, in memory, safe from any thread.
///
/// `resolve` answers the question APNs asks for every push: is this token a device of this
/// environment with this app installed? Unknown tokens either become devices (auto-register,
/// the quick-start default) or are rejected (`BadDeviceToken`, strict mode).
///
/// The stored devices may be loaded while the server already answers (``beginLoading()`` … ``finishLoading()``,
/// the `RegistryLoader`): meanwhile a token it does not hold may be a stored device not loaded yet —
/// ``needsLookup(_:)`` says so, and the caller looks it up in the store and hands the answer to ``adopt(_:for:)``
/// before it resolves a push. Every change made meanwhile (pushes, the API, lookups) settles its token: the
/// loader's older copy never replaces it.
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
        let state = Locked(ShardState())
    }

    /// A shard's devices and, while the stored devices load, the tokens the loader must leave alone.
    private struct ShardState {
        var devices = DeviceTable()
        /// While loading: the tokens changed or looked up since it began (what the registry holds for them is newer
        /// than what the loader read, or the store has none). nil when not loading.
        var settled: Set<DeviceToken>?

        /// A change from anything but the loader.
        mutating func set(_ device: Device?, for token: DeviceToken) {
            devices[token] = device
            settled?.insert(token)
        }
    }

    private static let shardCount = 16
    private let shards: [Shard] = (0..<DeviceRegistry.shardCount).map { _ in Shard() }
    private let appTable = Locked<[String: App]>([:])
    /// Boxed: a closure kept directly in a `Locked` is re-wrapped in reabstraction thunks on every
    /// `withLock` access, so the chain (and the stack depth of a call) grew with every new device.
    private let autoRegisterHandler = Locked<AutoRegisterHandler?>(nil)
    public let unknownTokenPolicy: UnknownTokenPolicy
    /// True from ``beginLoading()`` to ``finishLoading()`` (read on every push: one atomic load).
    private let loading = Atomic<Bool>(false)
    /// Signalled by ``finishLoading()`` (each waiter passes it on).
    private let loaded = DispatchSemaphore(value: 0)

    public init(unknownTokenPolicy: UnknownTokenPolicy = .autoRegister) {
        self.unknownTokenPolicy = unknownTokenPolicy
    }

    private func shardIndex(for token: DeviceToken) -> Int {
        Int(UInt(bitPattern: token.hashValue) % UInt(Self.shardCount))
    }

    private func shard(for token: DeviceToken) -> Shard { shards[shardIndex(for: token)] }

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
        shard(for: device.token).state.withLock { $0.set(device, for: device.token) }
    }

    /// Makes room for `count` devices in all (before loading them at start: growing a table of a million
    /// devices step by step rehashed every token about twice).
    public func reserveDeviceCapacity(_ count: Int) {
        let perShard = count / Self.shardCount + count / Self.shardCount / 8 + 16
        for shard in shards { shard.state.withLock { $0.devices.reserveCapacity(perShard) } }
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
        shard(for: device.token).state.withLock { state in
            if state.devices[device.token] == device { state.set(nil, for: device.token) }
        }
    }

    /// Forgets a device.
    public func remove(token: DeviceToken) {
        shard(for: token).state.withLock { $0.set(nil, for: token) }
    }

    /// Removes the devices `selected` picks and adds `devices`, shard by shard, each shard in one step under
    /// its lock (a reset of the sandbox: a push never finds a device of the configuration missing meanwhile).
    public func replaceDevices(where selected: (Device) -> Bool, with devices: [Device]) {
        var byShard: [ObjectIdentifier: [Device]] = [:]
        for device in devices { byShard[ObjectIdentifier(shard(for: device.token)), default: []].append(device) }
        for shard in shards {
            shard.state.withLock { state in
                precondition(state.settled == nil, "replaceDevices while the stored devices load (wait for them first)")
                state.devices.removeAll(where: selected)
                for device in byShard[ObjectIdentifier(shard)] ?? [] { state.devices[device.token] = device }
            }
        }
    }

    public func device(token: DeviceToken) -> Device? {
        shard(for: token).state.withLock { $0.devices[token] }
    }

    public var deviceCount: Int { shards.reduce(0) { count, shard in count + shard.state.withLock { $0.devices.count } } }

    /// Marks `bundleID` uninstalled on the device at `time` (ms); later pushes get 410.
    /// - Returns: false when the device or app is unknown.
    @discardableResult
    public func uninstall(bundleID: String, from token: DeviceToken, at time: Int64) -> Bool {
        shard(for: token).state.withLock { state in
            // Settled only when it held the device: a stored device not loaded yet must still come in.
            guard state.devices.uninstall(bundleID: bundleID, from: token, at: time) else { return false }
            state.settled?.insert(token)
            return true
        }
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
        shard(for: token).state.withLock { state in
            switch state.devices.admit(token, environment: environment, bundleID: bundleID, now: now) {
            case .admitted: return nil
            case .refused(let error): return error
            case .unknownToken: break
            }
            guard unknownTokenPolicy == .autoRegister else { return APNsError(.badDeviceToken) }
            let newDevice = Device(
                token: token, environment: environment,
                apps: [InstalledApp(bundleID: bundleID, installedAt: now)], isAutoRegistered: true)
            state.set(newDevice, for: token)
            // Only new tokens take the handler's lock (lock order: shard, then handler).
            autoRegisterHandler.withLock { $0 }?.call(newDevice)
            return nil
        }
    }

    /// ``resolve(token:environment:bundleID:now:)`` without its side effect: an unknown token is not
    /// registered (nil for one that would be auto-registered).
    public func check(token: DeviceToken, environment: APNsEnvironment, bundleID: String, now: Int64) -> APNsError? {
        shard(for: token).state.withLock { state in
            switch state.devices.admit(token, environment: environment, bundleID: bundleID, now: now) {
            case .admitted: return nil
            case .refused(let error): return error
            case .unknownToken: return unknownTokenPolicy == .autoRegister ? nil : APNsError(.badDeviceToken)
            }
        }
    }

    // MARK: Loading the stored devices

    /// Whether stored devices may still be missing (``beginLoading()`` was called, ``finishLoading()`` not yet).
    public var isLoading: Bool { loading.load(ordering: .acquiring) }

    /// From now until ``finishLoading()``, ``load(_:)`` adds stored devices without replacing what changed meanwhile,
    /// and ``needsLookup(_:)`` is true for a token neither loaded nor settled. Called once, before the first batch.
    public func beginLoading() {
        for shard in shards { shard.state.withLock { $0.settled = [] } }
        loading.store(true, ordering: .releasing)
    }

    /// Adds a batch of stored devices (the loader's, read from the store): a token settled since loading began keeps
    /// what it has; any other gets the stored device.
    public func load(_ devices: [Device]) {
        var byShard = [[Device]](repeating: [], count: Self.shardCount)
        for device in devices { byShard[shardIndex(for: device.token)].append(device) }
        for (index, batch) in byShard.enumerated() where !batch.isEmpty {
            shards[index].state.withLock { state in
                for device in batch where state.settled?.contains(device.token) != true {
                    state.devices[device.token] = device
                }
            }
        }
    }

    /// Every stored device is in: the registry answers for every token alone again, and waiters wake.
    public func finishLoading() {
        guard loading.load(ordering: .acquiring) else { return }
        for shard in shards { shard.state.withLock { $0.settled = nil } }
        loading.store(false, ordering: .releasing)
        loaded.signal()
    }

    /// True while loading for a token the registry neither holds nor has settled: it may be a stored device not
    /// loaded yet, so a push to it must wait for a lookup in the store (``adopt(_:for:)``).
    public func needsLookup(_ token: DeviceToken) -> Bool {
        guard isLoading else { return false }
        return shard(for: token).state.withLock { state in
            guard let settled = state.settled else { return false }
            return !settled.contains(token) && !state.devices.contains(token)
        }
    }

    /// What a lookup in the store found for `token` (nil: no such device) while loading: kept unless the token was
    /// settled meanwhile (a change after the lookup read the store, or an earlier lookup); the token is settled.
    /// Ignored once loaded.
    public func adopt(_ device: Device?, for token: DeviceToken) {
        shard(for: token).state.withLock { state in
            guard let settled = state.settled, !settled.contains(token) else { return }
            state.set(device, for: token)
        }
    }

    /// Blocks until every stored device is loaded, at most `seconds` (a reset replaces every device at once).
    /// - Returns: false when the time ran out first.
    public func waitUntilLoaded(seconds: Double) -> Bool {
        guard isLoading else { return true }
        guard loaded.wait(timeout: .now() + seconds) == .success else { return false }
        loaded.signal()  // the next waiter
        return true
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
