// APNs Sandbox — lifecycle events: what SSE subscribers and webhooks receive.
import APNsProtocol
import Support

/// The kinds of event the sandbox publishes (issue #6); the raw value is the wire name.
public enum SandboxEventType: String, Sendable, CaseIterable, Codable {
    case pushAccepted = "push.accepted"
    case pushRejected = "push.rejected"
    case notificationStored = "notification.stored"
    case notificationDisplayed = "notification.displayed"
    case notificationDeliveredSilent = "notification.delivered-silent"
    case notificationExpired = "notification.expired"
    case notificationDiscarded = "notification.discarded"
    case deviceUpdated = "device.updated"
    /// Sent only to one webhook subscription on request (`POST /api/v1/webhooks/{id}/test`); never logged.
    case webhookTest = "webhook.test"
    /// The sandbox was reset (`POST /api/v1/reset`, whole or scoped) or a snapshot was restored: what a
    /// consumer shows may be gone.
    case sandboxReset = "sandbox.reset"

    /// The event a record reaching `status` announces, if any (`delivering` and `extension-running` are
    /// steps inside delivery, not events).
    public init?(status: NotificationStatus) {
        switch status {
        case .accepted: self = .pushAccepted
        case .stored: self = .notificationStored
        case .displayed: self = .notificationDisplayed
        case .deliveredSilent: self = .notificationDeliveredSilent
        case .expired: self = .notificationExpired
        case .discarded: self = .notificationDiscarded
        case .delivering, .extensionRunning: return nil
        }
    }
}

/// An event not yet in the log: the store gives it its id when it commits.
public struct EventDraft: Sendable, Equatable {
    public var type: SandboxEventType
    /// Wall-clock milliseconds.
    public var time: Int64
    /// What the event is about, for filters (nil when it has no device or topic).
    public var deviceToken: String?
    public var topic: String?
    /// The event's `data` object as JSON text.
    public var data: [UInt8]

    public init(type: SandboxEventType, time: Int64, deviceToken: String? = nil, topic: String? = nil, data: [UInt8]) {
        self.type = type
        self.time = time
        self.deviceToken = deviceToken
        self.topic = topic
        self.data = data
    }
}

/// An event as logged: its id orders all events (1, 2, 3, …; never reused).
public struct SandboxEvent: Sendable, Equatable {
    public var id: Int64
    public var type: SandboxEventType
    public var time: Int64
    public var deviceToken: String?
    public var topic: String?
    public var data: [UInt8]

    public init(id: Int64, draft: EventDraft) {
        self.id = id
        self.type = draft.type
        self.time = draft.time
        self.deviceToken = draft.deviceToken
        self.topic = draft.topic
        self.data = draft.data
    }

    /// The id clients see (`webhook-id`, the envelope's `id`): `evt_` and the log position.
    public var publicID: String { "evt_\(id)" }

    /// The envelope every consumer receives, as in the Standard Webhooks payload structure:
    /// `{"id":"evt_1","type":"push.accepted","timestamp":"2026-11-30T10:00:00.000Z","data":{…}}`.
    public var envelope: [UInt8] {
        var writer = JSONWriter(reservingCapacity: data.count + 96)
        writer.member("id", publicID)
        writer.member("type", type.rawValue)
        writer.member("timestamp", ISOTimestamp.string(milliseconds: time))
        writer.member("data", json: data)
        return writer.finish()
    }
}

/// Which events a subscriber wants. Empty sets match everything.
public struct EventFilter: Sendable, Equatable, Codable {
    public var types: Set<SandboxEventType>
    public var deviceTokens: Set<String>
    public var topics: Set<String>

    public init(types: Set<SandboxEventType> = [], deviceTokens: Set<String> = [], topics: Set<String> = []) {
        self.types = types
        self.deviceTokens = deviceTokens
        self.topics = topics
    }

    public func matches(_ event: SandboxEvent) -> Bool {
        matches(type: event.type, deviceToken: event.deviceToken, topic: event.topic)
    }

    public func matches(type: SandboxEventType, deviceToken: String?, topic: String?) -> Bool {
        (types.isEmpty || types.contains(type))
            && (deviceTokens.isEmpty || deviceToken.map(deviceTokens.contains) == true)
            && (topics.isEmpty || topic.map(topics.contains) == true)
    }
}

/// The durable event log (the Store implements it). Events are appended in id order; reads see
/// every event whose commit has been announced.
public protocol EventLogRepository: Sendable {
    /// Appends events in one group-commit transaction; `completion` runs after the commit with the
    /// logged events (ids assigned), possibly on the store's own thread.
    func appendEvents(_ drafts: [EventDraft], completion: @escaping @Sendable (Result<[SandboxEvent], any Error>) -> Void)
    /// Events after `id` matching `filter`, oldest first, at most `limit`.
    func events(after id: Int64, matching filter: EventFilter, limit: Int) throws -> [SandboxEvent]
    /// The newest event's id (0 when the log is empty).
    func latestEventID() throws -> Int64
    /// The oldest event's id still in the log (nil when empty).
    func oldestEventID() throws -> Int64?
    /// Keeps at most `maxEvents` (newest) and none older than `cutoff` (wall ms).
    @discardableResult
    func pruneEvents(maxEvents: Int, olderThan cutoff: Int64) throws -> Int
}

/// Formats wall-clock milliseconds as RFC 3339 UTC with milliseconds (`2026-11-30T10:00:00.123Z`).
public enum ISOTimestamp {
    public static func string(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let millis = Int(milliseconds - seconds * 1000)
        let time = UTCDateTime(secondsSince1970: seconds)
        let pad = UTCDateTime.padded
        return "\(pad(time.year, 4))-\(pad(time.month, 2))-\(pad(time.day, 2))T\(pad(time.hour, 2)):"
            + "\(pad(time.minute, 2)):\(pad(time.second, 2)).\(pad(millis, 3))Z"
    }
}
