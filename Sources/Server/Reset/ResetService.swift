// APNs Sandbox — putting the simulated world back to what the configuration seeds, taking a snapshot of it,
// and loading a snapshot in its place.
import APNsProtocol
import Events
import Foundation
import Intake
import Sandbox
import Store
import Support
import Synchronization
import Webhooks

/// Carries out `POST /api/v1/reset` and `GET|POST /api/v1/snapshot` (docs/reset-and-snapshots.md).
///
/// ### A reset, in order
/// 1. The ``SteeringParticipant``s reset their part for the scope (faults, the clock).
/// 2. The in-memory push log and the per-device rate counts of the scope go.
/// 3. The delivery engine forgets the scope's pushes (``DeliveryEngine/forget(_:)``): from then on it writes
///    nothing of them, and what it handed to the store before is queued ahead of step 4.
/// 4. One store transaction (``SQLiteStore/reset(_:committed:)``) removes the scope's notifications and
///    events, puts its devices and apps back to their seed (or removes them) and logs `sandbox.reset`; right
///    after its commit, in commit order, the registry the provider endpoint reads follows, then the event
///    goes out (SSE streams stay open; webhooks receive it like any event).
/// 5. The removed notifications' attachment files go (in the background); the engine takes the devices'
///    online state from their records again.
///
/// Resets, restores and snapshots run one at a time, on the API's worker threads (never an event loop). Pushes
/// may go on meanwhile: one sent while a reset runs is either removed with it or kept whole.
final class ResetService: Sendable {
    struct Parts: Sendable {
        var configuration: SandboxConfiguration
        var store: any SandboxStore
        var outbox: any OutboxStore
        var webhooks: WebhookDispatcher
        var registry: DeviceRegistry
        var engine: DeliveryEngine
        var pushes: RecentPushes
        var rateLimiter: (any PushRateLimiter)?
        var attachments: AttachmentSweeper
        var participants: SteeringParticipants
        var keys: ProviderKeyStore
        var clock: any SandboxClock
        var logger: Logger
    }

    let parts: Parts
    /// One reset, restore or snapshot at a time. Held on a worker thread across store writes.
    let serial = Locked(())

    init(_ parts: Parts) {
        self.parts = parts
    }

    /// What a reset did (the `reset` object of the answer).
    struct ResetSummary: Encodable, Sendable {
        var scope: String
        var teamId: String?
        var bundleId: String?
        var deviceToken: String?
        var notificationsRemoved: Int
        var eventsRemoved: Int
        var devicesRemoved: Int
        var devicesRestored: Int
        var appsRemoved: Int
        var appsRestored: Int
        /// Pushes that were on their way (stored, batched, committing) and were dropped.
        var pushesForgotten: Int
        var participants: [String]
        /// The `sandbox.reset` event.
        var eventId: String?
        var durationMs: Double
    }

    /// Resets `scope` (see the type's documentation) and returns once everything is done.
    /// - Throws: A participant's or the store's error (500); what ran before it stays done.
    func reset(_ scope: ResetScope) throws -> ResetSummary {
        try waitForStoredDevices()
        return try serial.withLock { _ in try performReset(scope) }
    }

    /// A reset or a restore replaces the registry's devices at once: not while stored ones are still coming in
    /// after a start (the `RegistryLoader`). - Throws: 503 when they take over a minute more.
    func waitForStoredDevices() throws {
        guard parts.registry.waitUntilLoaded(seconds: 60) else {
            throw ServiceError.stillLoading(what: "stored devices")
        }
    }

    private func performReset(_ scope: ResetScope) throws -> ResetSummary {
        let started = MonotonicClock.seconds()
        let participants = parts.participants.all
        for participant in participants { try participant.reset(scope) }
        let now = parts.clock.nowMilliseconds
        let seed = try Seed(parts.configuration, now: now)
        var teamApps: Set<String> = []
        if case .team(let teamID) = scope {
            teamApps = Set(parts.registry.apps.filter { $0.teamID == teamID }.map(\.bundleID))
                .union(try parts.store.apps().filter { $0.teamID == teamID }.map(\.bundleID))
                .union(seed.apps.values.filter { $0.teamID == teamID }.map(\.bundleID))
        }
        var plan = Self.plan(scope, seed: seed, bundleIDs: teamApps, now: now)
        plan.store.announcement = Self.announcement(cause: "reset", scope: scope, at: now)
        parts.pushes.removeAll(where: plan.pushes, resettingCounts: plan.isEverything)
        if plan.isEverything || plan.deviceToken != nil {
            parts.rateLimiter?.forget(plan.deviceToken.flatMap { DeviceToken(hex: $0) })
        }
        let forgotten = parts.engine.forget(plan.engine)
        let registry = parts.registry
        let (isEverything, bundleIDs) = (plan.isEverything, plan.bundleIDs)
        let seedApps = seed.apps.values.map { App(bundleID: $0.bundleID, teamID: $0.teamID) }
        let seedDevices = seed.devices.values.compactMap(DeviceService.device(from:))
        let outcome = try parts.store.reset(plan.store) { outcome in
            if isEverything {
                registry.replaceDevices(where: { _ in true }, with: seedDevices)
                registry.replaceApps(where: { _ in true }, with: seedApps)
            } else {
                Self.follow(outcome.devices, in: registry)
                // Apps the provider registered in memory only (never stored) go too.
                registry.replaceApps(
                    where: { bundleIDs.contains($0.bundleID) }, with: seedApps.filter { bundleIDs.contains($0.bundleID) })
            }
        }
        parts.attachments.removed(outcome.removedNotifications)
        var resynchronized = Set(outcome.devices.compactMap { $0.before?.token ?? $0.after?.token })
        if let token = plan.deviceToken { resynchronized.insert(token) }
        parts.engine.resynchronize(tokens: isEverything ? nil : resynchronized)
        let counts = outcome.counts
        let names = Self.scopeNames(scope)
        return ResetSummary(
            scope: names.scope, teamId: names.teamID, bundleId: names.bundleID, deviceToken: names.deviceToken,
            notificationsRemoved: counts.notificationsRemoved, eventsRemoved: counts.eventsRemoved,
            devicesRemoved: counts.devicesRemoved, devicesRestored: counts.devicesWritten,
            appsRemoved: counts.appsRemoved, appsRestored: counts.appsWritten, pushesForgotten: forgotten,
            participants: participants.map(\.name), eventId: outcome.event?.publicID,
            durationMs: ((MonotonicClock.seconds() - started) * 1e6).rounded() / 1000)
    }

    /// The registry follows the devices a reset rewrote or removed.
    static func follow(_ devices: [DeviceModification], in registry: DeviceRegistry) {
        for change in devices {
            if let after = change.after {
                if let device = DeviceService.device(from: after) { registry.upsert(device) }
            } else if let token = change.before.flatMap({ DeviceToken(hex: $0.token) }) {
                registry.remove(token: token)
            }
        }
    }

    /// The names the API and the event use for `scope`.
    static func scopeNames(_ scope: ResetScope) -> (scope: String, teamID: String?, bundleID: String?, deviceToken: String?) {
        switch scope {
        case .all: ("all", nil, nil, nil)
        case .team(let team): ("team", team, nil, nil)
        case .app(let bundleID): ("app", nil, bundleID, nil)
        case .device(let token): ("device", nil, nil, token)
        }
    }

    /// The `sandbox.reset` event: `cause` (`reset` or `restore`), `scope` (`all`, `team`, `app`, `device`), the
    /// scope's `teamId`, `bundleId` or `deviceToken`, and what was removed. A device scope's event is about
    /// that device and an app scope's about that app (for SSE and webhook filters).
    static func announcement(cause: String, scope: ResetScope, at time: Int64) -> @Sendable (StoreResetOutcome.Counts) -> EventDraft {
        let names = scopeNames(scope)
        return { counts in
            var writer = JSONWriter()
            writer.member("cause", cause)
            writer.member("scope", names.scope)
            writer.member("teamId", names.teamID)
            writer.member("bundleId", names.bundleID)
            writer.member("deviceToken", names.deviceToken)
            writer.member("notificationsRemoved", counts.notificationsRemoved)
            writer.member("eventsRemoved", counts.eventsRemoved)
            return EventDraft(
                type: .sandboxReset, time: time, deviceToken: names.deviceToken, topic: names.bundleID, data: writer.finish())
        }
    }

    // MARK: - Snapshots

    /// The document of `GET /api/v1/snapshot`.
    func snapshot(includingNotifications: Bool, includingSecrets: Bool) throws -> SnapshotExport {
        try serial.withLock { _ in
            var devices: [DeviceRecord] = []
            try parts.store.forEachDevice { devices.append($0) }
            let notifications = includingNotifications
                ? try parts.store.notifications(matching: NotificationFilter(), limit: Int.max, offset: 0).map(NotificationSnapshot.init)
                : nil
            return SnapshotExport(
                takenAt: parts.clock.nowMilliseconds,
                devices: devices.map { SnapshotExport.Device($0, withSecrets: includingSecrets) },
                apps: try parts.store.apps().map(AppDTO.init),
                providerKeys: parts.keys.all.map(SnapshotExport.PublicKey.init),
                webhooks: try parts.outbox.subscriptions().map { SnapshotExport.Webhook($0.subscription) },
                notifications: notifications,
                sections: try parts.participants.all.map { ($0.name, try $0.export()) })
        }
    }
}
