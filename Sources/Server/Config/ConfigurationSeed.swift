// APNs Sandbox — the configuration file's apps, devices and webhooks, brought into the store at each start.
import APNsProtocol
import Crypto
import Events
import ExtensionRuntime
import Foundation
import Sandbox
import Store
import Support
import Webhooks

/// What the configuration file declares (teams' apps, `apps`, `devices`, `webhooks.subscriptions`) applied to
/// the store, which the REST API changes too.
///
/// ### Precedence
/// The file wins only where it changed. Each app of `apps` and each device of `devices` is stored with a
/// fingerprint of its entry as applied (``AppRecord/configuredAs``): a start whose entry has the same
/// fingerprint keeps the stored state, so changes made through the API survive restarts; an entry that
/// changed in the file since is applied again, replacing what the API set (logged). A new entry is simply
/// added; an app only listed in `teams[].apps` is created once and never touched again; entities removed
/// from the file stay in the store (delete them through the API). A stored app without a fingerprint (from
/// `teams[].apps`, or written by an earlier version, which re-applied the file at every start) gets the
/// file's entry, with a warning when that replaces something different; a stored device without one (an
/// earlier version never re-applied devices) is adopted as it is.
enum ConfigurationSeed {
    /// Applies teams' apps, `apps` and `devices`, then loads every stored app into the registry the provider
    /// endpoint reads (its devices: the `RegistryLoader`, the next step of the start).
    static func apply(
        _ configuration: SandboxConfiguration, devices: DeviceService, store: any SandboxStore, logger: Logger
    ) throws {
        let now = devices.clock.nowMilliseconds
        for fromFile in try Self.seedApps(configuration) {
            if let extensionJSON = fromFile.serviceExtensionJSON {
                do {
                    try ExtensionConfiguration.validate(json: extensionJSON)
                } catch {
                    throw ConfigurationError("apps[\(fromFile.bundleID)].serviceExtension: \(error)")
                }
            }
            let stored = try store.app(bundleID: fromFile.bundleID)
            guard fromFile.configuredAs != nil else {
                // Only in `teams[].apps`: created once, never touched again.
                if stored == nil { try store.saveApp(fromFile) }
                continue
            }
            if let stored, stored.configuredAs == fromFile.configuredAs { continue }
            if let stored, !Self.sameContent(stored, fromFile) {
                let message = stored.configuredAs == nil
                    ? "the configuration file's entry replaces the stored app (stored before entries were fingerprinted, or created from teams[].apps); changes made through the API are gone"
                    : "the configuration file changed this app since it was last applied: its entry replaces the stored one (changes made through the API are gone)"
                logger.warning(message, [("app", fromFile.bundleID)])
            }
            try store.saveApp(fromFile)
        }
        for device in configuration.devices {
            let seed = try Self.seedRecord(device, now: now)
            let (token, fingerprint, environment) = (seed.token, seed.configuredAs, device.environment)
            guard var stored = try store.device(token: token) else {
                try devices.save(seed)
                continue
            }
            if stored.configuredAs == fingerprint { continue }
            if stored.configuredAs == nil {
                // Stored before fingerprints: it was never re-applied then, so adopt it as it is.
                stored.configuredAs = fingerprint
                try devices.save(stored)
                continue
            }
            logger.warning("the configuration file changed this device since it was last applied: its entry replaces the stored one (changes made through the API are gone)", [
                ("device.token_prefix", String(token.prefix(8))),
            ])
            stored.environment = environment
            stored.locale = device.locale
            stored.apps = device.apps.map { bundleID in
                stored.apps.first { $0.bundleID == bundleID && $0.uninstalledAt == nil }
                    ?? InstalledAppRecord(bundleID: bundleID, installedAt: now)
            }
            stored.configuredAs = fingerprint
            try devices.save(stored)
        }
        for app in try store.apps() { devices.registry.upsert(App(bundleID: app.bundleID, teamID: app.teamID)) }
    }

    /// The record a device of the file gets when the store has none (and after a reset): online, its apps
    /// installed at `now`, no keys, the entry's fingerprint.
    /// - Throws: ``ConfigurationError`` for a token that is not hex.
    static func seedRecord(_ device: DeviceConfiguration, now: Int64) throws -> DeviceRecord {
        guard let token = DeviceToken(hex: device.token) else {
            throw ConfigurationError("device \(device.token.prefix(8))…: not a hex device token")
        }
        return DeviceRecord(
            token: token.hex, environment: device.environment, locale: device.locale, isOnline: true,
            apps: device.apps.map { InstalledAppRecord(bundleID: $0, installedAt: now) }, createdAt: now,
            configuredAs: try fingerprint(device))
    }

    /// The records the file's apps get: each entry of `apps` with its fingerprint, then each app only listed
    /// in `teams[].apps`, bare (an app listed in both gets its entry).
    static func seedApps(_ configuration: SandboxConfiguration) throws -> [AppRecord] {
        var records = try configuration.apps.map { app in
            AppRecord(
                bundleID: app.bundleID, teamID: app.teamID, strings: app.strings,
                serviceExtensionJSON: app.serviceExtension?.serialized, configuredAs: try fingerprint(app))
        }
        for team in configuration.teams {
            for bundleID in team.apps where !records.contains(where: { $0.bundleID == bundleID }) {
                records.append(AppRecord(bundleID: bundleID, teamID: team.teamID))
            }
        }
        return records
    }

    /// Brings the configuration file's webhook subscriptions into the store: new ones start with the
    /// next event, existing ones keep their cursor (and their generated secret when the file gives
    /// none); configured ones removed from the file are deleted.
    static func applyWebhooks(
        _ webhooks: WebhookConfiguration, outbox: any OutboxStore, eventLog: any EventLogRepository, clock: any SandboxClock
    ) throws {
        let stored = try outbox.subscriptions()
        let latest = try eventLog.latestEventID()
        let now = clock.nowMilliseconds
        let configuredIDs = Set(webhooks.subscriptions.map(\.id))
        for (subscription, _) in stored where subscription.source == "config" && !configuredIDs.contains(subscription.id) {
            try outbox.deleteSubscription(id: subscription.id)
        }
        for configured in webhooks.subscriptions {
            let existing = stored.first { $0.subscription.id == configured.id }?.subscription
            try outbox.saveSubscription(WebhookSubscription(
                id: configured.id, url: configured.url,
                filter: WebhookSubscriptionRules.filter(events: configured.events, devices: configured.devices, topics: configured.topics),
                secret: configured.secret ?? existing?.secret ?? WebhookSignature.generateSecret(),
                description: configured.description, maxConcurrentDeliveries: configured.maxConcurrentDeliveries,
                createdAt: existing?.createdAt ?? now, source: "config"), cursor: latest)
        }
    }

    /// SHA-256 (hex) of an entry as the file gives it (keys sorted, so reformatting the file changes nothing).
    static func fingerprint(_ entry: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Hex.encode(SHA256Digest.hash(Array(try encoder.encode(entry))))
    }

    private static func sameContent(_ a: AppRecord, _ b: AppRecord) -> Bool {
        a.teamID == b.teamID && a.strings == b.strings && a.serviceExtensionJSON == b.serviceExtensionJSON
    }
}
