// APNs Sandbox — the JSON shapes of the REST API (documented in openapi.json).
import APNsProtocol
import Intake
import Sandbox

/// A device as the API shows it.
struct DeviceDTO: Codable, Sendable {
    struct AppDTO: Codable, Sendable {
        var bundleId: String
        var installedAt: Int64
        var uninstalledAt: Int64?
        var badge: Int?
    }

    var token: String
    var environment: String
    var locale: String
    var online: Bool
    var apps: [AppDTO]
    /// Bundle IDs that have a key in the device keychain (the keys themselves are not shown).
    var keychain: [String]
    var createdAt: Int64
    var autoRegistered: Bool

    init(_ record: DeviceRecord) {
        token = record.token
        environment = record.environment.rawValue
        locale = record.locale
        online = record.isOnline
        apps = record.apps.map { AppDTO(bundleId: $0.bundleID, installedAt: $0.installedAt, uninstalledAt: $0.uninstalledAt, badge: $0.badge) }
        keychain = record.keys.keys.sorted()
        createdAt = record.createdAt
        autoRegistered = record.isAutoRegistered
    }
}

/// `POST /api/v1/devices`.
struct CreateDeviceRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["token", "environment", "locale", "online", "apps", "keys"]

    /// Hex; generated (32 random bytes) when absent.
    var token: String?
    var environment: String?
    var locale: String?
    var online: Bool?
    var apps: [String]?
    /// bundleId → base64 key for the device keychain.
    var keys: [String: String]?
}

/// `PATCH /api/v1/devices/{token}`.
struct UpdateDeviceRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["online", "locale", "installApps", "uninstallApps", "keys", "rotateToken"]

    var online: Bool?
    var locale: String?
    var installApps: [String]?
    var uninstallApps: [String]?
    var keys: [String: String]?
    /// true: the device gets a new random token (the old one answers 410 ExpiredToken… as Unregistered).
    var rotateToken: Bool?
}

/// An app as the API shows it.
struct AppDTO: Codable, Sendable {
    var bundleId: String
    var teamId: String
    var strings: [String: [String: String]]
    var serviceExtension: JSON?

    init(_ record: AppRecord) {
        bundleId = record.bundleID
        teamId = record.teamID
        strings = record.strings
        serviceExtension = record.serviceExtensionJSON.flatMap { try? JSON.parse($0) }
    }
}

/// `POST /api/v1/apps` and `PATCH /api/v1/apps/{bundleId}`.
struct AppRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["bundleId", "teamId", "strings", "serviceExtension"]

    var bundleId: String?
    var teamId: String?
    var strings: [String: [String: String]]?
    /// `.null` when the body says `"serviceExtension": null` (remove it); nil when the key is absent.
    var serviceExtension: JSON?

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        teamId = try c.decodeIfPresent(String.self, forKey: .teamId)
        strings = try c.decodeIfPresent([String: [String: String]].self, forKey: .strings)
        if c.contains(.serviceExtension) {
            serviceExtension = try c.decodeNil(forKey: .serviceExtension) ? .null : try c.decode(JSON.self, forKey: .serviceExtension)
        }
    }
}

/// A notification record as the API shows it.
struct NotificationDTO: Codable, Sendable {
    struct Claims: Codable, Sendable {
        var teamId: String?
        var keyId: String?
        var issuedAt: Int64?
    }

    struct Header: Codable, Sendable {
        var name: String
        var value: String
    }

    var apnsId: String
    var uniqueId: String?
    var deviceToken: String
    var bundleId: String
    var topic: String
    var pushType: String?
    var priority: Int
    var expiration: Int64?
    var collapseId: String?
    var environment: String
    var headers: [Header]
    var payload: JSON?
    var authentication: String
    var jwt: Claims?
    var connectionId: UInt64
    var receivedAt: Int64
    var status: String
    var final: Bool
    var outcome: String?
    var displayed: DisplayedContentDTO?
    var timeline: [TimelineEntry]
    /// The fault rules applied to the push (absent when none).
    var faults: [AppliedFaultDTO]?

    init(_ record: NotificationRecord) {
        apnsId = record.apnsID
        uniqueId = record.uniqueID
        deviceToken = record.deviceToken
        bundleId = record.bundleID
        topic = record.topic
        pushType = record.pushType
        priority = record.priority
        expiration = record.expiration
        collapseId = record.collapseID
        environment = record.environment.rawValue
        headers = record.headers.map { header in
            // The provider token is a credential: show that it was there, not what it was.
            // Records stored before tokens were redacted at acceptance still hold them.
            let value = header.name == "authorization" ? RecordStage.redactedAuthorization : header.value
            return Header(name: header.name, value: value)
        }
        payload = try? JSON.parse(record.payload)
        authentication = record.authentication
        jwt = record.teamID == nil && record.keyID == nil ? nil
            : Claims(teamId: record.teamID, keyId: record.keyID, issuedAt: record.issuedAt)
        connectionId = record.connectionID
        receivedAt = record.receivedAt
        status = record.status.rawValue
        final = record.status.isFinal
        outcome = record.outcome?.rawValue
        displayed = record.displayed.map { DisplayedContentDTO($0, apnsID: record.apnsID, deviceToken: record.deviceToken) }
        timeline = record.timeline
        faults = record.faults.isEmpty ? nil : record.faults.map(AppliedFaultDTO.init)
    }
}

/// A fault rule's application to a push, as records and events show it.
struct AppliedFaultDTO: Codable, Sendable {
    var ruleId: String
    var name: String?
    var action: String
    var detail: String

    init(_ fault: AppliedFault) {
        ruleId = fault.ruleID
        name = fault.name
        action = fault.action
        detail = fault.detail
    }
}

struct DisplayedContentDTO: Codable, Sendable {
    var title: String?
    var subtitle: String?
    var body: String?
    var badge: Int?
    var sound: String?
    var threadId: String?
    var category: String?
    var interruptionLevel: String?
    var targetContentId: String?
    var relevanceScore: Double?
    var userInfo: JSON?
    var attachments: [AttachmentDTO]

    /// An attachment as the API and the events show it: where to download it, never a server path.
    struct AttachmentDTO: Codable, Sendable {
        var identifier: String
        var type: String
        var size: Int
        var href: String
    }

    init(_ content: DisplayedContent, apnsID: String, deviceToken: String) {
        title = content.title
        subtitle = content.subtitle
        body = content.body
        badge = content.badge
        sound = content.sound
        threadId = content.threadID
        category = content.category
        interruptionLevel = content.interruptionLevel
        targetContentId = content.targetContentID
        relevanceScore = content.relevanceScore
        userInfo = content.userInfoJSON.flatMap { try? JSON.parse($0) }
        attachments = content.attachments.map { attachment in
            AttachmentDTO(
                identifier: attachment.identifier, type: attachment.type, size: attachment.size,
                href: NotificationEvents.attachmentHref(apnsID: apnsID, deviceToken: deviceToken, identifier: attachment.identifier))
        }
    }
}

/// A page of notifications.
struct NotificationListDTO: Codable, Sendable {
    var total: Int
    var limit: Int
    var offset: Int
    /// Pass as `after` to select only the notifications created since this answer.
    var cursor: Int64
    var notifications: [NotificationDTO]
}

/// What the user sees on a device: displayed notifications (newest first, after collapse) and badges.
struct NotificationCenterDTO: Codable, Sendable {
    struct Item: Codable, Sendable {
        var apnsId: String
        var bundleId: String
        var identifier: String
        var displayedAt: Int64
        var content: DisplayedContentDTO
    }

    var notifications: [Item]
    /// Every listed notification, those a `limit` left out included.
    var total: Int
    var badges: [String: Int]

    init(_ view: NotificationCenterView, deviceToken: String) {
        notifications = view.notifications.map {
            Item(apnsId: $0.apnsID, bundleId: $0.bundleID, identifier: $0.identifier, displayedAt: $0.displayedAt,
                 content: DisplayedContentDTO($0.content, apnsID: $0.apnsID, deviceToken: deviceToken))
        }
        total = view.total
        badges = view.badges
    }
}
