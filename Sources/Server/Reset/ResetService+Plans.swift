// APNs Sandbox — what a reset of each scope changes: the configuration's seed, the store's plan, the rest.
import APNsProtocol
import Sandbox
import Store

extension ResetService {
    /// What the configuration seeds, as records written at `now` (ConfigurationSeed's records).
    struct Seed: Sendable {
        /// Devices of `devices`, by token.
        var devices: [String: DeviceRecord] = [:]
        /// Apps of `apps` and `teams[].apps`, by bundle ID.
        var apps: [String: AppRecord] = [:]

        init(_ configuration: SandboxConfiguration, now: Int64) throws {
            for device in configuration.devices {
                let record = try ConfigurationSeed.seedRecord(device, now: now)
                devices[record.token] = record
            }
            for app in try ConfigurationSeed.seedApps(configuration) { apps[app.bundleID] = app }
        }
    }

    /// A reset of one scope, worked out before anything changes.
    struct Plan: Sendable {
        var store = StoreReset()
        var engine = DeliveryEngine.ResetSelection()
        /// Which in-memory push records go.
        var pushes: @Sendable (PushLogEntry) -> Bool = { _ in false }
        var isEverything = false
        /// The device of a device scope.
        var deviceToken: String?
        /// The apps of an app or team scope.
        var bundleIDs: Set<String> = []
    }

    /// The plan for `scope` at `now`; `bundleIDs` are the apps a team scope covers (ignored otherwise).
    static func plan(_ scope: ResetScope, seed: Seed, bundleIDs teamApps: Set<String>, now: Int64) -> Plan {
        var plan = Plan()
        switch scope {
        case .all:
            plan.isEverything = true
            plan.engine = .everything
            plan.pushes = { _ in true }
            plan.store.notifications = .everything
            plan.store.events = .everything
            let seedDevices = seed.devices
            plan.store.device = { record in seedDevices[record.token].map { Self.rewrite(record, toSeed: $0) } ?? .delete }
            plan.store.devicesToAdd = seed.devices.values.sorted { $0.token < $1.token }
            let seedApps = seed.apps
            plan.store.app = { record in seedApps[record.bundleID].map { Self.rewrite(record, toSeed: $0) } ?? .delete }
            plan.store.appsToAdd = seed.apps.values.sorted { $0.bundleID < $1.bundleID }
        case .device(let token):
            plan.deviceToken = token
            plan.engine = DeliveryEngine.ResetSelection(deviceTokens: [token])
            plan.pushes = { $0.deviceToken == token }
            plan.store.notifications = .matching(deviceTokens: [token], bundleIDs: [])
            plan.store.events = .matching(deviceTokens: [token], bundleIDs: [])
            let seeded = seed.devices[token]
            plan.store.device = { record in
                record.token != token ? .keep : seeded.map { Self.rewrite(record, toSeed: $0) } ?? .delete
            }
            plan.store.devicesToDecide = [token]
            plan.store.devicesToAdd = seeded.map { [$0] } ?? []
        case .app(let bundleID):
            plan = appPlan([bundleID], seed: seed, now: now)
        case .team:
            plan = appPlan(teamApps, seed: seed, now: now)
        }
        return plan
    }

    /// Every app of `bundleIDs`: its notifications and their events go, the app goes back to its seed (or
    /// goes), and every device drops it (and its keychain key) unless the configuration installs it there,
    /// where it is installed afresh; a device of no configuration entry left with no app goes.
    private static func appPlan(_ bundleIDs: Set<String>, seed: Seed, now: Int64) -> Plan {
        var plan = Plan()
        plan.bundleIDs = bundleIDs
        plan.engine = DeliveryEngine.ResetSelection(bundleIDs: bundleIDs)
        let topics = Self.topics(of: bundleIDs)
        plan.pushes = { push in push.bundleID.map(bundleIDs.contains) ?? push.topic.map(topics.contains) ?? false }
        guard !bundleIDs.isEmpty else { return plan }
        plan.store.notifications = .matching(deviceTokens: [], bundleIDs: bundleIDs)
        plan.store.events = .matching(deviceTokens: [], bundleIDs: bundleIDs)
        plan.store.rejectedTopics = topics
        let seedApps = seed.apps
        plan.store.app = { record in
            guard bundleIDs.contains(record.bundleID) else { return .keep }
            return seedApps[record.bundleID].map { Self.rewrite(record, toSeed: $0) } ?? .delete
        }
        plan.store.appsToAdd = bundleIDs.sorted().compactMap { seed.apps[$0] }
        let seedDevices = seed.devices
        plan.store.device = { record in
            let seeded = seedDevices[record.token]
            let configured = (seeded?.apps ?? []).filter { bundleIDs.contains($0.bundleID) }
            var updated = record
            updated.apps = record.apps.compactMap { app in
                guard bundleIDs.contains(app.bundleID) else { return app }
                guard let fresh = configured.first(where: { $0.bundleID == app.bundleID }) else { return nil }
                // Installed, never uninstalled, no badge: as the seed has it already.
                return app.uninstalledAt == nil && app.badge == nil ? app : fresh
            }
            for app in configured where !updated.apps.contains(where: { $0.bundleID == app.bundleID }) {
                updated.apps.append(app)
            }
            updated.keys = record.keys.filter { !bundleIDs.contains($0.key) }
            if updated == record { return .keep }
            return seeded == nil && updated.apps.isEmpty && !record.apps.isEmpty ? .delete : .save(updated)
        }
        return plan
    }

    /// The seed of a configured device, unless `record` is in that state already (only its creation and
    /// install times differ): then it is kept as it is, so a reset of an untouched sandbox changes nothing.
    static func rewrite(_ record: DeviceRecord, toSeed seed: DeviceRecord) -> StoreReset.Change<DeviceRecord> {
        var comparable = seed
        comparable.createdAt = record.createdAt
        if record.apps.map(\.bundleID) == seed.apps.map(\.bundleID) {
            for index in comparable.apps.indices { comparable.apps[index].installedAt = record.apps[index].installedAt }
        }
        return comparable == record ? .keep : .save(seed)
    }

    /// The seed of a configured app, unless `record` is that already.
    static func rewrite(_ record: AppRecord, toSeed seed: AppRecord) -> StoreReset.Change<AppRecord> {
        record == seed ? .keep : .save(seed)
    }

    /// The topics pushes to these apps use: each bundle ID and its push types' topics (`….voip`).
    static func topics(of bundleIDs: Set<String>) -> Set<String> {
        var topics = bundleIDs
        for bundleID in bundleIDs {
            for suffix in PushType.allCases.compactMap(\.topicSuffix) { topics.insert(bundleID + suffix) }
        }
        return topics
    }
}
