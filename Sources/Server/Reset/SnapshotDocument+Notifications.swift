// APNs Sandbox — notifications in a snapshot document: the record as the API shows it, plus what it derives from.
import APNsProtocol
import Sandbox

/// A notification record in a snapshot: the fields of `GET /api/v1/notifications/{apnsId}` (``NotificationDTO``,
/// whose headers and claims it shares) without the derived ones (`final`, the attachments' `href`), plus each attachment's `path` under
/// `<dataDirectory>/attachments/` (the files themselves are not in the document). The `authorization`
/// header's value is redacted, as in the API.
struct NotificationSnapshot: Encodable, Sendable {
    struct Displayed: Encodable, Sendable {
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
        var attachments: [Attachment]
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
    var headers: [NotificationDTO.Header]
    var payload: JSON
    var authentication: String
    var jwt: NotificationDTO.Claims?
    var connectionId: UInt64
    var receivedAt: Int64
    var status: String
    var outcome: String?
    var displayed: Displayed?
    var timeline: [TimelineEntry]

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
        headers = NotificationDTO.headers(of: record)
        payload = (try? JSON.parse(record.payload)) ?? .object([])
        authentication = record.authentication
        jwt = NotificationDTO.claims(of: record)
        connectionId = record.connectionID
        receivedAt = record.receivedAt
        status = record.status.rawValue
        outcome = record.outcome?.rawValue
        displayed = record.displayed.map { content in
            Displayed(
                title: content.title, subtitle: content.subtitle, body: content.body, badge: content.badge,
                sound: content.sound, threadId: content.threadID, category: content.category,
                interruptionLevel: content.interruptionLevel, targetContentId: content.targetContentID,
                relevanceScore: content.relevanceScore, userInfo: content.userInfoJSON.flatMap { try? JSON.parse($0) },
                attachments: content.attachments)
        }
        timeline = record.timeline
    }
}

extension SnapshotDocument {
    static let notificationKeys = [
        "apnsId", "uniqueId", "deviceToken", "bundleId", "topic", "pushType", "priority", "expiration", "collapseId",
        "environment", "headers", "payload", "authentication", "jwt", "connectionId", "receivedAt", "status", "outcome",
        "displayed", "timeline",
    ]

    static func notification(_ object: JSONObjectReader) throws -> NotificationRecord {
        try object.rejectUnknownKeys(allowed: notificationKeys)
        let apnsID = try object.requiredString("apnsId")
        guard !apnsID.isEmpty, apnsID.utf8.count <= 64 else { throw object.error("apnsId", "must be 1–64 characters") }
        guard let token = DeviceToken(hex: try object.requiredString("deviceToken")) else {
            throw object.error("deviceToken", "must be 32–400 hex digits (an even number)")
        }
        let bundleID = try bundleID(object, "bundleId")
        let topic = try object.requiredString("topic")
        guard !topic.isEmpty else { throw object.error("topic", "must not be empty") }
        let pushType = try object.string("pushType")
        if let pushType, PushType(rawValue: pushType) == nil { throw object.error("pushType", "is not an APNs push type") }
        let priority = Int(try object.int64("priority") ?? 10)
        guard [1, 5, 10].contains(priority) else { throw object.error("priority", "must be 1, 5 or 10") }
        let environment = try checked(object, "environment") { try APIBody.environment(try object.requiredString("environment")) }
        var headers: [HeaderField] = []
        for header in try object.objects("headers") ?? [] {
            try header.rejectUnknownKeys(allowed: ["name", "value"])
            headers.append(HeaderField(name: try header.requiredString("name"), value: try header.requiredString("value")))
        }
        let payload = try object.required("payload")
        guard payload.members != nil else { throw object.error("payload", "must be a JSON object") }
        var teamID: String?
        var keyID: String?
        var issuedAt: Int64?
        if let jwt = try object.object("jwt") {
            try jwt.rejectUnknownKeys(allowed: ["teamId", "keyId", "issuedAt"])
            (teamID, keyID, issuedAt) = (try jwt.string("teamId"), try jwt.string("keyId"), try jwt.int64("issuedAt"))
        }
        let connectionID = try object.int64("connectionId", in: 0...Int64.max) ?? 0
        let statusName = try object.requiredString("status")
        guard let status = NotificationStatus(rawValue: statusName) else {
            throw object.error("status", "must be one of \(NotificationStatus.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var outcome: DisplayOutcome?
        if let name = try object.string("outcome") {
            guard let parsed = DisplayOutcome(rawValue: name) else {
                throw object.error("outcome", "must be one of \(DisplayOutcome.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            outcome = parsed
        }
        return NotificationRecord(
            apnsID: apnsID, uniqueID: try object.string("uniqueId"), deviceToken: token.hex, bundleID: bundleID, topic: topic,
            pushType: pushType, priority: priority, expiration: try object.int64("expiration"),
            collapseID: try object.string("collapseId"), environment: environment, headers: headers,
            payload: payload.serialized, authentication: try object.string("authentication") ?? "none", teamID: teamID,
            keyID: keyID, issuedAt: issuedAt, connectionID: UInt64(connectionID),
            receivedAt: try object.requiredInt64("receivedAt"), status: status, outcome: outcome,
            displayed: try object.object("displayed").map(displayed), timeline: try timeline(object))
    }

    private static func displayed(_ object: JSONObjectReader) throws -> DisplayedContent {
        try object.rejectUnknownKeys(allowed: [
            "title", "subtitle", "body", "badge", "sound", "threadId", "category", "interruptionLevel", "targetContentId",
            "relevanceScore", "userInfo", "attachments",
        ])
        var attachments: [Attachment] = []
        for entry in try object.objects("attachments") ?? [] {
            try entry.rejectUnknownKeys(allowed: ["identifier", "type", "size", "path"])
            let path = try entry.requiredString("path")
            guard !path.contains(".."), !path.hasPrefix("/") else {
                throw entry.error("path", "must be a path under the attachments folder (no .., not absolute)")
            }
            attachments.append(Attachment(
                identifier: try entry.requiredString("identifier"), type: try entry.requiredString("type"),
                size: Int(try entry.requiredInt64("size", in: 0...Int64.max)), path: path))
        }
        let userInfo = object.value("userInfo")
        if let userInfo, userInfo.members == nil { throw object.error("userInfo", "must be a JSON object") }
        return DisplayedContent(
            title: try object.string("title"), subtitle: try object.string("subtitle"), body: try object.string("body"),
            badge: try object.int64("badge").map(Int.init),
            sound: try object.string("sound"), threadID: try object.string("threadId"), category: try object.string("category"),
            interruptionLevel: try object.string("interruptionLevel"), targetContentID: try object.string("targetContentId"),
            relevanceScore: try object.double("relevanceScore"), userInfoJSON: userInfo?.serialized, attachments: attachments)
    }

    private static func timeline(_ object: JSONObjectReader) throws -> [TimelineEntry] {
        try (object.objects("timeline") ?? []).map { entry in
            try entry.rejectUnknownKeys(allowed: ["step", "at", "monotonic", "detail"])
            return TimelineEntry(
                step: try entry.requiredString("step"), at: try entry.requiredInt64("at"),
                monotonic: UInt64(try entry.int64("monotonic", in: 0...Int64.max) ?? 0), detail: try entry.string("detail"))
        }
    }
}
