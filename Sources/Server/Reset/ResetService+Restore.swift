// APNs Sandbox — loading a snapshot document in place of the current state (`POST /api/v1/snapshot`).
import APNsProtocol
import Events
import Sandbox
import Store
import Support
import Webhooks

extension ResetService {
    /// What a restore did (the `restored` object of the answer).
    struct RestoreSummary: Encodable, Sendable {
        struct ProviderKeys: Encodable, Sendable {
            /// The document's keys the configuration has, the same.
            var configured: [String] = []
            /// Key IDs the configuration does not have: not registered (tokens they sign are refused); add
            /// them to `teams[].keys` to accept them.
            var notConfigured: [String] = []
            /// Key IDs the configuration has with another team, public key, scope or environment: the
            /// configuration's stays.
            var different: [String] = []
        }

        var devices: Int
        var apps: Int
        var notifications: Int
        var webhooks: Int
        /// Subscriptions that got a generated secret (the document has none): `rotate-secret` sets a known one.
        var webhooksWithNewSecret: [String]
        var providerKeys: ProviderKeys
        /// The participants restored from a section (the others were reset).
        var sections: [String]
        var notificationsRemoved: Int
        var eventId: String?
        var durationMs: Double
    }

    /// Replaces the state with `document` (validated, its sections by their participants too): like a reset of
    /// everything, then the document's devices, apps, notifications and webhook subscriptions in place of what
    /// the reset left of the same keys. The event log starts again (ids go on) with one `sandbox.reset` event
    /// (`cause` `restore`). Provider keys are compared with the configuration, never registered.
    func restore(_ document: SnapshotDocument) throws -> RestoreSummary {
        try waitForStoredDevices()
        return try serial.withLock { _ in try performRestore(document) }
    }

    private func performRestore(_ document: SnapshotDocument) throws -> RestoreSummary {
        let started = MonotonicClock.seconds()
        var sections: [String] = []
        for participant in parts.participants.all {
            if let section = document.sections[participant.name] {
                try participant.restore(section)
                sections.append(participant.name)
            } else {
                try participant.reset(.all)
            }
        }
        let now = parts.clock.nowMilliseconds
        let seed = try Seed(parts.configuration, now: now)
        // A device or app of the configuration keeps its fingerprint: the next start keeps what was restored.
        let devices = seed.devices.filter { token, _ in !document.devices.contains { $0.token == token } }.map(\.value)
            + document.devices.map { record in
                var record = record
                record.configuredAs = seed.devices[record.token]?.configuredAs
                return record
            }
        let apps = seed.apps.filter { bundleID, _ in !document.apps.contains { $0.bundleID == bundleID } }.map(\.value)
            + document.apps.map { record in
                var record = record
                record.configuredAs = seed.apps[record.bundleID]?.configuredAs
                return record
            }
        var plan = StoreReset()
        plan.notifications = .everything
        plan.events = .everything
        plan.device = { _ in .delete }
        plan.devicesToAdd = devices
        plan.app = { _ in .delete }
        plan.appsToAdd = apps
        // The document lists them newest first, as the API does; inserted oldest first.
        plan.notificationsToInsert = document.notifications.reversed()
        plan.announcement = Self.announcement(cause: "restore", scope: .all, at: now)
        parts.pushes.removeAll(where: { _ in true }, resettingCounts: true)
        parts.rateLimiter?.forget(nil)
        parts.engine.forget(.everything)
        let registry = parts.registry
        let registryDevices = devices.compactMap(DeviceService.device(from:))
        let registryApps = apps.map { App(bundleID: $0.bundleID, teamID: $0.teamID) }
        let outcome = try parts.store.reset(plan) { _ in
            registry.replaceDevices(where: { _ in true }, with: registryDevices)
            registry.replaceApps(where: { _ in true }, with: registryApps)
        }
        parts.attachments.removed(outcome.removedNotifications)
        parts.engine.resynchronize(tokens: nil)
        parts.engine.adopt(document.notifications)
        // Answered once the adopted pushes' resumed deliveries committed (up to a service extension running).
        parts.engine.waitUntilAllSettled()
        let newSecrets = try restoreWebhooks(document.webhooks)
        return RestoreSummary(
            devices: document.devices.count, apps: document.apps.count, notifications: document.notifications.count,
            webhooks: document.webhooks.count, webhooksWithNewSecret: newSecrets,
            providerKeys: compare(document.providerKeys), sections: sections,
            notificationsRemoved: outcome.counts.notificationsRemoved, eventId: outcome.event?.publicID,
            durationMs: ((MonotonicClock.seconds() - started) * 1e6).rounded() / 1000)
    }

    /// Makes the subscriptions the configuration file's plus the document's: one the document has replaces
    /// the one of its id (keeping that one's cursor and, without a secret in the document, its secret); one
    /// made through the API that the document lacks goes. New ones receive the events logged from now on.
    /// - Returns: The ids that got a generated secret.
    private func restoreWebhooks(_ entries: [SnapshotDocument.WebhookEntry]) throws -> [String] {
        let existing = try parts.outbox.subscriptions().map(\.subscription)
        let configured = Set(parts.configuration.webhooks.subscriptions.map(\.id))
        let wanted = Set(entries.map(\.subscription.id))
        for subscription in existing where !wanted.contains(subscription.id) && !configured.contains(subscription.id) {
            _ = try parts.webhooks.remove(id: subscription.id)
        }
        var generated: [String] = []
        for entry in entries {
            let current = existing.first { $0.id == entry.subscription.id }
            var subscription = entry.subscription
            if let secret = entry.secret ?? current?.secret {
                subscription.secret = secret
            } else {
                subscription.secret = WebhookSignature.generateSecret()
                generated.append(subscription.id)
            }
            if subscription == current { continue }
            try parts.webhooks.add(subscription)
        }
        return generated
    }

    /// The document's provider keys against the configuration's: reported, never registered (who may push
    /// is the configuration file's to say, docs/security.md).
    private func compare(_ keys: [SnapshotDocument.ProviderKeyEntry]) -> RestoreSummary.ProviderKeys {
        var report = RestoreSummary.ProviderKeys()
        for entry in keys {
            guard let key = parts.keys[entry.keyID] else {
                report.notConfigured.append(entry.keyID)
                continue
            }
            if SnapshotDocument.ProviderKeyEntry(key) == entry {
                report.configured.append(entry.keyID)
            } else {
                report.different.append(entry.keyID)
            }
        }
        return report
    }
}

extension SnapshotDocument.ProviderKeyEntry {
    /// A configured key as the document would carry it.
    init(_ key: ProviderKey) {
        let exported = SnapshotExport.PublicKey(key)
        teamID = key.teamID
        keyID = key.keyID
        publicKeyPEM = key.publicKey.pem
        scope = key.scope == .team ? .team : .topics
        topics = exported.topics
        environment = key.environment.map { $0 == .development ? .development : .production } ?? .both
    }
}
