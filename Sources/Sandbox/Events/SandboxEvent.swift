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
    /// A fault rule was applied to a push (`/api/v1/faults`).
    case faultApplied = "fault.applied"
    /// The virtual clock was frozen, advanced, set, resumed or put back to real time (`/api/v1/clock`).
    case clockChanged = "clock.changed"
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
    /// Milliseconds since the epoch of an RFC 3339 UTC time as ``string(milliseconds:)`` writes it, with or
    /// without the fraction (`2026-12-02T08:00:00Z`, `…:00.250Z`); nil for anything else.
    public static func milliseconds(from text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<(start + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, UInt8)] = [(4, 45), (7, 45), (10, 84), (13, 58), (16, 58)]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1 }),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var millis = 0
        if bytes.count > 20 {
            let digits = bytes.count - 21
            guard bytes[19] == UInt8(ascii: "."), (1...9).contains(digits), let fraction = number(20, digits) else { return nil }
            var scaled = fraction
            for _ in 0..<max(0, digits - 3) { scaled /= 10 }
            for _ in 0..<max(0, 3 - digits) { scaled *= 10 }
            millis = scaled
        } else if bytes.count != 20 {
            return nil
        }
        // Days from the civil date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = Int64(era * 146_097 + dayOfEra - 719_468)
        return ((days * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000 + Int64(second) * 1000 + Int64(millis)
    }

    public static func string(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let millis = Int(milliseconds - seconds * 1000)
        let time = UTCDateTime(secondsSince1970: seconds)
        let pad = UTCDateTime.padded
        return "\(pad(time.year, 4))-\(pad(time.month, 2))-\(pad(time.day, 2))T\(pad(time.hour, 2)):"
            + "\(pad(time.minute, 2)):\(pad(time.second, 2)).\(pad(millis, 3))Z"
    }
}
