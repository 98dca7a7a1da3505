// APNs Sandbox — the JSON shapes of the notifications API and the notification center (documented in openapi.json).
import APNsProtocol
import Intake
import Sandbox

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
        headers = Self.headers(of: record)
        payload = try? JSON.parse(record.payload)
        authentication = record.authentication
        jwt = Self.claims(of: record)
        connectionId = record.connectionID
        receivedAt = record.receivedAt
        status = record.status.rawValue
        final = record.status.isFinal
        outcome = record.outcome?.rawValue
        displayed = record.displayed.map { DisplayedContentDTO($0, apnsID: record.apnsID, deviceToken: record.deviceToken) }
        timeline = record.timeline
        faults = record.faults.isEmpty ? nil : record.faults.map(AppliedFaultDTO.init)
    }

    /// The record's headers as the API and snapshots show them: the provider token is a credential, so
    /// `authorization` shows that it was there, not what it was (records stored before tokens were redacted at
    /// acceptance still hold them).
    static func headers(of record: NotificationRecord) -> [Header] {
        record.headers.map { header in
            Header(name: header.name, value: header.name == "authorization" ? RecordStage.redactedAuthorization : header.value)
        }
    }

    /// The provider token's claims the record keeps (nil for a certificate or no authentication).
    static func claims(of record: NotificationRecord) -> Claims? {
        record.teamID == nil && record.keyID == nil ? nil
            : Claims(teamId: record.teamID, keyId: record.keyID, issuedAt: record.issuedAt)
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
