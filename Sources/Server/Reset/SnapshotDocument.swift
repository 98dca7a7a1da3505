// APNs Sandbox — the snapshot document: the simulated world as one JSON document, and reading one back.
import APNsProtocol
import Crypto
import Events
import ExtensionRuntime
import Foundation
import Sandbox
import Webhooks

/// The sandbox as one document (`GET /api/v1/snapshot`, restored by `POST /api/v1/snapshot`;
/// docs/reset-and-snapshots.md): devices, apps, the provider keys' public parts, webhook subscriptions
/// (never their secrets), optionally notifications with their records, and one section per
/// ``SteeringParticipant`` (`faults`, `clock`).
///
/// Reading (``parse(_:sections:execPolicy:now:)``) validates the whole document before anything is changed:
/// unknown fields are errors, and every error names the path of the field (`devices[2].token`).
struct SnapshotDocument: Sendable {
    /// The document format this build writes and reads.
    static let currentVersion = 1

    /// A provider key as the document carries it: the public half only.
    struct ProviderKeyEntry: Sendable, Equatable {
        var teamID: String
        var keyID: String
        /// SubjectPublicKeyInfo PEM, as OpenSSL writes it.
        var publicKeyPEM: String
        var scope: TeamConfiguration.Key.Scope
        var topics: [String]
        var environment: TeamConfiguration.Key.Environment
    }

    /// A webhook subscription as the document carries it: no secret, except one written into the document
    /// by hand for the restore.
    struct WebhookEntry: Sendable {
        var subscription: WebhookSubscription
        var secret: String?
    }

    var takenAt: Int64?
    var devices: [DeviceRecord] = []
    var apps: [AppRecord] = []
    var providerKeys: [ProviderKeyEntry] = []
    var webhooks: [WebhookEntry] = []
    var notifications: [NotificationRecord] = []
    /// The participants' sections by name.
    var sections: [String: JSON] = [:]

    static let topLevelKeys = ["version", "takenAt", "devices", "apps", "providerKeys", "webhooks", "notifications"]

    /// Reads and validates a whole document.
    /// - Parameters:
    ///   - sections: The names of the registered participants (each may have a section).
    ///   - execPolicy: What an `exec` service extension may run (as for `PATCH /api/v1/apps`).
    ///   - now: Wall ms for times the document leaves out.
    /// - Throws: ``APIError``: 400 `invalid_json` for what is not JSON, 422 `invalid_snapshot` naming the path
    ///   of the first bad field, 403 `exec_not_allowed` for an extension the API may not set.
    static func parse(_ body: [UInt8], sections: [String], execPolicy: ExecPolicy, now: Int64) throws -> SnapshotDocument {
        guard !body.isEmpty else { throw APIError(status: 400, code: "invalid_json", message: "A snapshot document is required") }
        let tree: JSON
        do {
            // A snapshot nests a payload (itself up to the usual depth) a few levels down.
            tree = try JSON.parse(body, maxDepth: JSON.maxDepth + 8)
        } catch {
            throw APIError(status: 400, code: "invalid_json", message: "The body is not valid JSON: \(error)")
        }
        do {
            return try read(tree, sections: sections, execPolicy: execPolicy, now: now)
        } catch let error as SnapshotSectionError {
            throw APIError(status: 422, code: "invalid_snapshot", message: error.description)
        }
    }

    private static func read(_ tree: JSON, sections: [String], execPolicy: ExecPolicy, now: Int64) throws -> SnapshotDocument {
        let root = try JSONObjectReader(tree, path: "")
        try root.rejectUnknownKeys(allowed: topLevelKeys + sections)
        let version = try root.requiredInt64("version")
        guard version == Int64(currentVersion) else {
            throw root.error("version", "must be \(currentVersion) (this server reads version \(currentVersion) documents), not \(version)")
        }
        var document = SnapshotDocument()
        document.takenAt = try root.int64("takenAt", in: 0...Int64.max)
        document.devices = try (root.objects("devices") ?? []).map { try device($0, now: now) }
        try requireUnique(document.devices.map(\.token), in: "devices", field: "token")
        document.apps = try (root.objects("apps") ?? []).map { try app($0, execPolicy: execPolicy) }
        try requireUnique(document.apps.map(\.bundleID), in: "apps", field: "bundleId")
        document.providerKeys = try (root.objects("providerKeys") ?? []).map(providerKey)
        try requireUnique(document.providerKeys.map(\.keyID), in: "providerKeys", field: "keyId")
        document.webhooks = try (root.objects("webhooks") ?? []).map { try webhook($0, now: now) }
        try requireUnique(document.webhooks.map(\.subscription.id), in: "webhooks", field: "id")
        document.notifications = try (root.objects("notifications") ?? []).map(notification)
        try requireUnique(document.notifications.map { "\($0.apnsID) on \($0.deviceToken)" }, in: "notifications", field: "apnsId")
        for name in sections {
            if let section = root.value(name) { document.sections[name] = section }
        }
        return document
    }

    /// Throws naming the second of two entries with the same key.
    private static func requireUnique(_ keys: [String], in array: String, field: String) throws {
        var seen = Set<String>()
        for (index, key) in keys.enumerated() where !seen.insert(key).inserted {
            throw SnapshotSectionError(path: "\(array)[\(index)].\(field)", "\(key) is given twice")
        }
    }

    /// A bundle ID as the sandbox may have stored it: a push's topic names it, so anything APNs takes as a
    /// topic (1–255 bytes without white space or control characters), not only what the apps API accepts.
    static func bundleID(_ object: JSONObjectReader, _ key: String) throws -> String {
        let text = try object.requiredString(key)
        guard PushRequestValidator.isValidTopic(text) else {
            throw object.error(key, "must be 1–255 bytes without white space or control characters")
        }
        return text
    }

    /// Runs one of ``APIBody``'s checks for the field `key`, its 422 becoming an error at that path.
    static func checked<Value>(_ object: JSONObjectReader, _ key: String, _ check: () throws -> Value) throws -> Value {
        do {
            return try check()
        } catch let error as APIError where error.status == 422 {
            throw object.error(key, error.message)
        }
    }

    // MARK: Devices and apps

    static let deviceKeys = ["token", "environment", "locale", "online", "apps", "keychainKeys", "createdAt", "autoRegistered"]

    private static func device(_ object: JSONObjectReader, now: Int64) throws -> DeviceRecord {
        try object.rejectUnknownKeys(allowed: deviceKeys)
        guard let token = DeviceToken(hex: try object.requiredString("token")) else {
            throw object.error("token", "must be 32–400 hex digits (an even number)")
        }
        let environment = try checked(object, "environment") { try APIBody.environment(try object.string("environment") ?? "development") }
        let locale = try checked(object, "locale") { try APIBody.locale(try object.string("locale") ?? "en_US") }
        var apps: [InstalledAppRecord] = []
        for entry in try object.objects("apps") ?? [] {
            try entry.rejectUnknownKeys(allowed: ["bundleId", "installedAt", "uninstalledAt", "badge"])
            let bundleID = try bundleID(entry, "bundleId")
            guard !apps.contains(where: { $0.bundleID == bundleID }) else { throw entry.error("bundleId", "\(bundleID) is given twice") }
            apps.append(InstalledAppRecord(
                bundleID: bundleID, installedAt: try entry.int64("installedAt") ?? now,
                uninstalledAt: try entry.int64("uninstalledAt"),
                badge: try entry.int64("badge").map(Int.init)))
        }
        let keys = try checked(object, "keychainKeys") { try APIBody.keys(try object.stringMap("keychainKeys") ?? [:]) }
        return DeviceRecord(
            token: token.hex, environment: environment, locale: locale, isOnline: try object.bool("online") ?? true,
            apps: apps, keys: keys, createdAt: try object.int64("createdAt") ?? now,
            isAutoRegistered: try object.bool("autoRegistered") ?? false)
    }

    private static func app(_ object: JSONObjectReader, execPolicy: ExecPolicy) throws -> AppRecord {
        try object.rejectUnknownKeys(allowed: ["bundleId", "teamId", "strings", "serviceExtension"])
        let bundleID = try bundleID(object, "bundleId")
        let teamID = try object.requiredString("teamId")
        guard !teamID.isEmpty, teamID.count <= 64 else { throw object.error("teamId", "must be 1–64 characters") }
        var strings: [String: [String: String]] = [:]
        if let table = try object.object("strings") {
            for (language, _) in table.allMembers {
                strings[language] = try table.stringMap(language) ?? [:]
            }
        }
        var extensionJSON: String?
        if let value = object.value("serviceExtension") {
            do {
                extensionJSON = try APIBody.serviceExtensionText(value, execPolicy: execPolicy)
            } catch let error as APIError {
                // 403 stays 403 (a program the API may not set), with the path in front.
                throw APIError(status: error.status, code: error.code, message: "\(object.keyPath("serviceExtension")): \(error.message)")
            }
        }
        return AppRecord(bundleID: bundleID, teamID: teamID, strings: strings, serviceExtensionJSON: extensionJSON)
    }

    // MARK: Provider keys and webhooks

    private static func providerKey(_ object: JSONObjectReader) throws -> ProviderKeyEntry {
        try object.rejectUnknownKeys(allowed: ["teamId", "keyId", "publicKey", "scope", "topics", "environment"])
        let teamID = try object.requiredString("teamId")
        let keyID = try object.requiredString("keyId")
        guard !keyID.isEmpty else { throw object.error("keyId", "must not be empty") }
        let pem = try object.requiredString("publicKey")
        guard pem.contains("-----BEGIN PUBLIC KEY-----"), let key = try? ES256PublicKey(pem: pem) else {
            throw object.error("publicKey", "must be an ES256 (P-256) public key in PEM (-----BEGIN PUBLIC KEY-----)")
        }
        func named<Value: ConfigurationEnum>(_ field: String, default value: Value) throws -> Value {
            guard let name = try object.string(field) else { return value }
            guard let parsed = Value(configurationName: name) else { throw object.error(field, Value.notOneOf(name)) }
            return parsed
        }
        let scope = try named("scope", default: TeamConfiguration.Key.Scope.team)
        return ProviderKeyEntry(
            teamID: teamID, keyID: keyID, publicKeyPEM: key.pem, scope: scope,
            topics: scope == .team ? [] : (try object.strings("topics") ?? []).sorted(),
            environment: try named("environment", default: TeamConfiguration.Key.Environment.both))
    }

    private static func webhook(_ object: JSONObjectReader, now: Int64) throws -> WebhookEntry {
        try object.rejectUnknownKeys(allowed: [
            "id", "url", "events", "devices", "topics", "description", "maxConcurrentDeliveries", "createdAt", "source", "secret",
        ])
        let id = try object.requiredString("id")
        guard !id.isEmpty, id.count <= 128 else { throw object.error("id", "must be 1–128 characters") }
        let url = try object.requiredString("url")
        let events = try object.strings("events") ?? []
        let secret = try object.string("secret")
        if let problem = WebhookSubscriptionRules.problem(url: url, events: events, secret: secret) {
            throw object.error(nil, problem)
        }
        let limit = try object.int64("maxConcurrentDeliveries", in: 1...256).map(Int.init)
        let source = try object.string("source") ?? "api"
        guard source == "api" || source == "config" else { throw object.error("source", "must be api or config") }
        let subscription = WebhookSubscription(
            id: id, url: url,
            filter: WebhookSubscriptionRules.filter(events: events, devices: try object.strings("devices"), topics: try object.strings("topics")),
            secret: secret ?? "", description: try object.string("description"), maxConcurrentDeliveries: limit,
            createdAt: try object.int64("createdAt") ?? now, source: source)
        return WebhookEntry(subscription: subscription, secret: secret)
    }
}
