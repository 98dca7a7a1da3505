// APNs Sandbox — a notification's life on a simulated device: status, outcome, content, timeline.
import APNsProtocol

/// Where a notification is in its lifecycle (`architecture.md`):
/// `accepted` → (`stored` while offline) → `delivering` → (`extension-running`) → a final status.
public enum NotificationStatus: String, Sendable, Codable, CaseIterable {
    case accepted
    case stored
    case delivering
    case extensionRunning = "extension-running"
    case displayed
    case deliveredSilent = "delivered-silent"
    case expired
    case discarded

    /// Final statuses never change again.
    public var isFinal: Bool {
        switch self {
        case .displayed, .deliveredSilent, .expired, .discarded: true
        case .accepted, .stored, .delivering, .extensionRunning: false
        }
    }
}

/// How a displayed notification got its content.
public enum DisplayOutcome: String, Sendable, Codable, CaseIterable {
    /// The service extension's content.
    case processed
    /// Content handed over in `serviceExtensionTimeWillExpire`.
    case bestAttempt = "best-attempt"
    /// The extension ran out of time: the original is shown.
    case originalTimeout = "original-timeout"
    case originalError = "original-error"
    case originalCrash = "original-crash"
    /// The extension's content had no title, subtitle or body: the original is shown.
    case originalNoAlert = "original-no-alert"
    /// No extension ran.
    case direct
}

/// A file attached to a displayed notification.
public struct Attachment: Sendable, Codable, Equatable {
    public var identifier: String
    public var type: String
    public var size: Int
    /// Path relative to the data directory's attachments folder.
    public var path: String

    public init(identifier: String, type: String, size: Int, path: String) {
        self.identifier = identifier
        self.type = type
        self.size = size
        self.path = path
    }
}

/// What the user sees: the notification's content after localization (and the extension).
public struct DisplayedContent: Sendable, Codable, Equatable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var category: String?
    public var interruptionLevel: String?
    public var targetContentID: String?
    public var relevanceScore: Double?
    /// The payload's custom keys (everything beside `aps`), as JSON text.
    public var userInfoJSON: String?
    public var attachments: [Attachment]

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, badge: Int? = nil, sound: String? = nil,
        threadID: String? = nil, category: String? = nil, interruptionLevel: String? = nil,
        targetContentID: String? = nil, relevanceScore: Double? = nil, userInfoJSON: String? = nil,
        attachments: [Attachment] = []
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.interruptionLevel = interruptionLevel
        self.targetContentID = targetContentID
        self.relevanceScore = relevanceScore
        self.userInfoJSON = userInfoJSON
        self.attachments = attachments
    }
}

/// One step of a notification's life.
public struct TimelineEntry: Sendable, Codable, Equatable {
    /// A status name (`accepted`, `stored`, …) or an event (`collapsed`, `extension-handler-ignored`, …).
    public var step: String
    /// Wall-clock milliseconds since the epoch.
    public var at: Int64
    /// Monotonic nanoseconds (ordering and durations within one run of the server).
    public var monotonic: UInt64
    public var detail: String?

    public init(step: String, at: Int64, monotonic: UInt64, detail: String? = nil) {
        self.step = step
        self.at = at
        self.monotonic = monotonic
        self.detail = detail
    }
}

/// One request header of a record: a name (lowercase) and its value.
///
/// JSON and the stored record have it as `[name, value]`, the shape of the list it replaced (an array per
/// header cost an allocation per header on every push); a list of other lengths reads as its first two strings.
public struct HeaderField: Sendable, Equatable, Codable, ExpressibleByArrayLiteral {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `["name", "value"]`.
    public init(arrayLiteral parts: String...) {
        self.init(parts: parts)
    }

    /// The first part is the name and the second the value; missing ones are empty.
    public init(parts: [String]) {
        name = parts.first ?? ""
        value = parts.count > 1 ? parts[1] : ""
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var parts: [String] = []
        while !container.isAtEnd { parts.append(try container.decode(String.self)) }
        self.init(parts: parts)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(name)
        try container.encode(value)
    }
}

/// An accepted push on its way to (or on) a device: the durable unit the store keeps.
public struct NotificationRecord: Sendable, Codable, Equatable {
    public var apnsID: String
    public var uniqueID: String?
    public var deviceToken: String
    public var bundleID: String
    public var topic: String
    public var pushType: String?
    public var priority: Int
    /// Epoch seconds; 0 = deliver now or never; nil = Apple's default storage (30 days).
    public var expiration: Int64?
    public var collapseID: String?
    public var environment: APNsEnvironment
    /// Request headers as received (lowercased names).
    public var headers: [HeaderField]
    /// The payload as received (UTF-8 JSON).
    public var payload: String
    /// `token:<team>/<key>`, `certificate:<bundle>`.
    public var authentication: String
    /// JWT claims of token-authenticated pushes.
    public var teamID: String?
    public var keyID: String?
    public var issuedAt: Int64?
    public var connectionID: UInt64
    /// Wall-clock milliseconds.
    public var receivedAt: Int64
    public var status: NotificationStatus
    public var outcome: DisplayOutcome?
    public var displayed: DisplayedContent?
    public var timeline: [TimelineEntry]
    /// Fault rules applied to the push (at most one today: the first rule that matched).
    public var faults: [AppliedFault] = []

    public init(
        apnsID: String, uniqueID: String? = nil, deviceToken: String, bundleID: String, topic: String,
        pushType: String? = nil, priority: Int = 10, expiration: Int64? = nil, collapseID: String? = nil,
        environment: APNsEnvironment = .development, headers: [HeaderField] = [], payload: String,
        authentication: String = "", teamID: String? = nil, keyID: String? = nil, issuedAt: Int64? = nil,
        connectionID: UInt64 = 0, receivedAt: Int64, status: NotificationStatus = .accepted,
        outcome: DisplayOutcome? = nil, displayed: DisplayedContent? = nil, timeline: [TimelineEntry] = [],
        faults: [AppliedFault] = []
    ) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceToken = deviceToken
        self.bundleID = bundleID
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.environment = environment
        self.headers = headers
        self.payload = payload
        self.authentication = authentication
        self.teamID = teamID
        self.keyID = keyID
        self.issuedAt = issuedAt
        self.connectionID = connectionID
        self.receivedAt = receivedAt
        self.status = status
        self.outcome = outcome
        self.displayed = displayed
        self.timeline = timeline
        self.faults = faults
    }
}
