// APNs Sandbox — writing the snapshot document (`GET /api/v1/snapshot`).
import APNsProtocol
import Events
import Sandbox

/// The document as `GET /api/v1/snapshot` writes it (keys sorted, as every API answer). What
/// ``SnapshotDocument/parse(_:sections:execPolicy:now:)`` reads back.
struct SnapshotExport: Encodable, Sendable {
    struct Device: Encodable, Sendable {
        var token: String
        var environment: String
        var locale: String
        var online: Bool
        var apps: [DeviceDTO.AppDTO]
        /// Only with `?secrets=true`.
        var keychainKeys: [String: String]?
        var createdAt: Int64
        var autoRegistered: Bool

        init(_ record: DeviceRecord, withSecrets: Bool) {
            token = record.token
            environment = record.environment.rawValue
            locale = record.locale
            online = record.isOnline
            apps = DeviceDTO(record).apps
            keychainKeys = withSecrets && !record.keys.isEmpty ? record.keys : nil
            createdAt = record.createdAt
            autoRegistered = record.isAutoRegistered
        }
    }

    struct PublicKey: Encodable, Sendable {
        var teamId: String
        var keyId: String
        var publicKey: String
        var scope: String
        var topics: [String]
        var environment: String
    }

    struct Webhook: Encodable, Sendable {
        var id: String
        var url: String
        var events: [String]
        var devices: [String]
        var topics: [String]
        var description: String?
        var maxConcurrentDeliveries: Int?
        var createdAt: Int64
        var source: String

        init(_ subscription: WebhookSubscription) {
            id = subscription.id
            url = subscription.url
            events = subscription.filter.types.map(\.rawValue).sorted()
            devices = subscription.filter.deviceTokens.sorted()
            topics = subscription.filter.topics.sorted()
            description = subscription.description
            maxConcurrentDeliveries = subscription.maxConcurrentDeliveries
            createdAt = subscription.createdAt
            source = subscription.source
        }
    }

    var version = SnapshotDocument.currentVersion
    var takenAt: Int64
    var devices: [Device]
    var apps: [AppDTO]
    var providerKeys: [PublicKey]
    var webhooks: [Webhook]
    /// Only with `?notifications=true`.
    var notifications: [NotificationSnapshot]?
    /// The participants' sections, by name.
    var sections: [(String, JSON)]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(version, forKey: Key("version"))
        try container.encode(takenAt, forKey: Key("takenAt"))
        try container.encode(devices, forKey: Key("devices"))
        try container.encode(apps, forKey: Key("apps"))
        try container.encode(providerKeys, forKey: Key("providerKeys"))
        try container.encode(webhooks, forKey: Key("webhooks"))
        try container.encodeIfPresent(notifications, forKey: Key("notifications"))
        for (name, section) in sections {
            try container.encode(section, forKey: Key(name))
        }
    }
}

extension SnapshotExport.PublicKey {
    init(_ key: ProviderKey) {
        teamId = key.teamID
        keyId = key.keyID
        publicKey = key.publicKey.pem
        switch key.scope {
        case .team:
            scope = "team"
            topics = []
        case .topics(let allowed):
            scope = "topics"
            topics = allowed.sorted()
        }
        environment = key.environment?.rawValue ?? "both"
    }
}
