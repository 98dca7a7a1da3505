// APNs Sandbox — a validated push payload and the `aps` fields the simulator acts on.

/// A parsed payload: the raw bytes plus the `aps` dictionary's useful fields.
///
/// Made by ``PushRequestValidator/payload(_:pushType:)``, which has checked that the body is a JSON
/// object with an `aps` object. Field rules (Apple documents the types, not what happens otherwise):
/// - A field of the wrong JSON type, or `null`, counts as absent.
/// - `content-available` and `mutable-content` are on for the number `1` or `true` (iOS reads both
///   through `NSNumber`); any other value is off.
/// - `badge` must be an integer (no fraction or exponent) that fits `Int`.
/// - When a key appears twice, the last occurrence wins, as in `JSONSerialization`.
public struct Payload: Sendable {
    /// The body exactly as received, to hand to the device.
    public let raw: [UInt8]
    /// `aps.content-available` is 1: a background update.
    public var isContentAvailable = false
    /// `aps.mutable-content` is 1: the Notification Service Extension runs first.
    public var isMutableContent = false
    /// `aps.alert` is a non-empty string, or an object with a title, subtitle, body or loc key.
    public var hasAlert = false
    /// `aps.alert.title` when it is a string.
    public var alertTitle: String?
    /// `aps.alert.subtitle` when it is a string.
    public var alertSubtitle: String?
    /// `aps.alert.body`, or `aps.alert` itself when it is a non-empty string.
    public var alertBody: String?
    /// `aps.badge`; 0 removes the badge.
    public var badge: Int?
    /// `aps.sound` as a string, or the `name` of its critical-alert dictionary form.
    public var sound: String?
    /// `aps.thread-id`.
    public var threadID: String?
    /// `aps.category`.
    public var category: String?
    /// `aps.interruption-level`, such as `time-sensitive`; not checked against the four known values.
    public var interruptionLevel: String?
    /// A silent (background) push: content-available 1 and no alert, badge or sound.
    ///
    /// A sound dictionary without a `name` still counts as a sound.
    public var isSilent = false

    /// Parses `body`; nil when it is not strict JSON, not an object, or has no `aps` object.
    init?(parsing body: [UInt8]) {
        raw = body
        var aps: APSFields?
        var reader = JSONReader(body)
        do {
            try reader.readDocument { reader, key in
                guard key == "aps" else { return try reader.skipValue() }
                guard reader.nextIsObject() else {
                    aps = nil
                    return try reader.skipValue()
                }
                var fields = APSFields()
                try reader.readObject { reader, key in try fields.read(key, from: &reader) }
                aps = fields
            }
        } catch {
            return nil
        }
        guard let aps else { return nil }
        isContentAvailable = aps.isContentAvailable
        isMutableContent = aps.isMutableContent
        hasAlert = aps.hasAlert
        alertTitle = aps.alertTitle
        alertSubtitle = aps.alertSubtitle
        alertBody = aps.alertBody
        badge = aps.badge
        sound = aps.sound
        threadID = aps.threadID
        category = aps.category
        interruptionLevel = aps.interruptionLevel
        isSilent = aps.isContentAvailable && !aps.hasAlert && aps.badge == nil && !aps.hasSound
    }
}

/// The fields of one `aps` object, filled member by member.
private struct APSFields {
    var isContentAvailable = false
    var isMutableContent = false
    var hasAlert = false
    var alertTitle: String?
    var alertSubtitle: String?
    var alertBody: String?
    var badge: Int?
    var sound: String?
    var hasSound = false
    var threadID: String?
    var category: String?
    var interruptionLevel: String?

    /// Reads the value of the `aps` member `key`; unknown keys are validated and skipped.
    mutating func read(_ key: String, from reader: inout JSONReader) throws {
        switch key {
        case "content-available": isContentAvailable = Self.isOne(try reader.readScalar())
        case "mutable-content": isMutableContent = Self.isOne(try reader.readScalar())
        case "alert": try readAlert(from: &reader)
        case "badge":
            if case .integer(let value) = try reader.readScalar() { badge = Int(exactly: value) } else { badge = nil }
        case "sound": try readSound(from: &reader)
        case "thread-id": threadID = Self.string(try reader.readScalar())
        case "category": category = Self.string(try reader.readScalar())
        case "interruption-level": interruptionLevel = Self.string(try reader.readScalar())
        default: try reader.skipValue()
        }
    }

    private mutating func readAlert(from reader: inout JSONReader) throws {
        hasAlert = false
        alertTitle = nil
        alertSubtitle = nil
        alertBody = nil
        guard reader.nextIsObject() else {
            if case .string(let text) = try reader.readScalar(), !text.isEmpty {
                hasAlert = true
                alertBody = text
            }
            return
        }
        try reader.readObject { reader, key in
            switch key {
            case "title", "subtitle", "body":
                // ActivityKit alerts may carry {"loc-key":…} objects here: they count as alert text too.
                let value = try reader.readScalar()
                if value != .null { hasAlert = true }
                let text = Self.string(value)
                switch key {
                case "title": alertTitle = text
                case "subtitle": alertSubtitle = text
                default: alertBody = text
                }
            case "title-loc-key", "subtitle-loc-key", "loc-key":
                if try reader.readScalar() != .null { hasAlert = true }
            default:
                try reader.skipValue()
            }
        }
    }

    private mutating func readSound(from reader: inout JSONReader) throws {
        sound = nil
        hasSound = false
        guard reader.nextIsObject() else {
            sound = Self.string(try reader.readScalar())
            hasSound = sound != nil
            return
        }
        hasSound = true
        try reader.readObject { reader, key in
            if key == "name" { sound = Self.string(try reader.readScalar()) } else { try reader.skipValue() }
        }
    }

    private static func isOne(_ value: JSONReader.Scalar) -> Bool {
        value == .integer(1) || value == .bool(true)
    }

    private static func string(_ value: JSONReader.Scalar) -> String? {
        if case .string(let text) = value { text } else { nil }
    }
}
