// APNs Sandbox — UNNotificationContent as it travels between the runtime and an extension.
import APNsProtocol
import Sandbox

/// The content an extension receives and hands back (`UNMutableNotificationContent`'s editable properties).
///
/// `userInfo` is the **whole payload**, `aps` included, as on iOS. In JSON (the exec protocol's `content`
/// object, a webhook's response body) absent or null fields are nil: content handed back is complete, as a
/// `mutableCopy()` of the request's content is, so leaving a field out removes it.
public struct ExtensionContent: Sendable, Equatable {
    var title: String?
    var subtitle: String?
    var body: String?
    var badge: Int?
    var sound: String?
    var threadIdentifier: String?
    var categoryIdentifier: String?
    var targetContentIdentifier: String?
    var interruptionLevel: String?
    var relevanceScore: Double?
    var userInfo: JSON = .object([])
    var attachments: [AttachmentRequest] = []

    /// A file the extension wants attached: `location` is a `file://` URL or a path.
    struct AttachmentRequest: Sendable, Equatable {
        var identifier: String
        var location: String
        var typeHint: String?
    }

    /// True when a title, subtitle or body is there and not empty (iOS shows the original otherwise, §4.3).
    var hasAlertText: Bool {
        [title, subtitle, body].contains { !($0 ?? "").isEmpty }
    }

    /// The request's content: what the device built from the payload (`original`) and the payload itself.
    init(original: DisplayedContent, payload: JSON) {
        title = original.title
        subtitle = original.subtitle
        body = original.body
        badge = original.badge
        sound = original.sound
        threadIdentifier = original.threadID
        categoryIdentifier = original.category
        targetContentIdentifier = original.targetContentID
        interruptionLevel = original.interruptionLevel
        relevanceScore = original.relevanceScore
        userInfo = payload.members != nil ? payload : .object([])
    }

    /// Content as an extension wrote it.
    /// - Throws: ``ContentError`` naming the field of the wrong type.
    init(json value: JSON) throws {
        guard let members = value.members else { throw ContentError("content must be a JSON object") }
        func field(_ key: String) -> JSON? {
            guard let value = members.last(where: { $0.0 == key })?.1, value != .null else { return nil }
            return value
        }
        func string(_ key: String) throws -> String? {
            guard let value = field(key) else { return nil }
            guard let text = value.string else { throw ContentError("content.\(key) must be a string") }
            return text
        }
        title = try string("title")
        subtitle = try string("subtitle")
        body = try string("body")
        if let value = field("badge") {
            guard let number = value.int else { throw ContentError("content.badge must be an integer") }
            badge = number
        }
        if let value = field("sound") {
            if let name = value.string ?? value["name"]?.string {
                sound = name
            } else {
                throw ContentError("content.sound must be a string or an object with a name")
            }
        }
        threadIdentifier = try string("threadIdentifier")
        categoryIdentifier = try string("categoryIdentifier")
        targetContentIdentifier = try string("targetContentIdentifier")
        interruptionLevel = try string("interruptionLevel")
        if let value = field("relevanceScore") {
            guard let number = value.double, number.isFinite else { throw ContentError("content.relevanceScore must be a number") }
            relevanceScore = number
        }
        if let value = field("userInfo") {
            guard value.members != nil else { throw ContentError("content.userInfo must be an object") }
            userInfo = value
        }
        if let value = field("attachments") {
            guard case .array(let items) = value else { throw ContentError("content.attachments must be an array") }
            attachments = try items.enumerated().map { index, item in
                guard item.members != nil else { throw ContentError("content.attachments[\(index)] must be an object") }
                guard let location = item["url"]?.string ?? item["path"]?.string else {
                    throw ContentError("content.attachments[\(index)] needs a url")
                }
                return AttachmentRequest(identifier: item["identifier"]?.string ?? "", location: location,
                                         typeHint: item["options"]?["typeHint"]?.string)
            }
        }
    }

    /// The `content` object of the exec protocol (absent fields omitted).
    public var json: JSON {
        var members: [(String, JSON)] = []
        func add(_ key: String, _ value: String?) {
            if let value { members.append((key, .string(value))) }
        }
        add("title", title)
        add("subtitle", subtitle)
        add("body", body)
        if let badge { members.append(("badge", .number(badge))) }
        add("sound", sound)
        add("threadIdentifier", threadIdentifier)
        add("categoryIdentifier", categoryIdentifier)
        add("targetContentIdentifier", targetContentIdentifier)
        add("interruptionLevel", interruptionLevel)
        if let relevanceScore { members.append(("relevanceScore", .number(relevanceScore))) }
        members.append(("userInfo", userInfo))
        if !attachments.isEmpty {
            members.append(("attachments", .array(attachments.map { attachment in
                var item: [(String, JSON)] = [("identifier", .string(attachment.identifier)),
                                              ("url", .string(attachment.location))]
                if let hint = attachment.typeHint { item.append(("options", .object([("typeHint", .string(hint))]))) }
                return .object(item)
            })))
        }
        return .object(members)
    }

    /// What the device shows for this content.
    /// - Parameters:
    ///   - original: The request's displayed content; its `userInfoJSON` text is kept when `userInfo` is
    ///     unchanged, so numbers and member order come out exactly as received.
    ///   - requestUserInfo: The `userInfo` the extension was given.
    ///   - attachments: The accepted attachments.
    func displayed(original: DisplayedContent, requestUserInfo: JSON, attachments: [Attachment]) -> DisplayedContent {
        var userInfoJSON = original.userInfoJSON
        if userInfo != requestUserInfo {
            var custom = userInfo
            custom.set("aps", nil)
            userInfoJSON = custom.serialized
        }
        return DisplayedContent(
            title: title, subtitle: subtitle, body: body, badge: badge, sound: sound, threadID: threadIdentifier,
            category: categoryIdentifier, interruptionLevel: interruptionLevel, targetContentID: targetContentIdentifier,
            relevanceScore: relevanceScore, userInfoJSON: userInfoJSON, attachments: attachments)
    }

    /// Content that does not have the shape the protocol requires.
    struct ContentError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
