// APNs Sandbox — a small, fast JSON object writer for bodies built on hot paths (events).
import Support

/// Appends one JSON object to a byte buffer, member by member, without building a tree.
///
/// `JSONEncoder` costs tens of microseconds per object; events are written for every push, so they
/// are serialized with this instead. Optional members whose value is nil are left out. Strings are
/// escaped per RFC 8259 (`"`, `\`, control characters); everything else is copied as UTF-8.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.member("apnsId", id)
/// writer.member("priority", 10)
/// let bytes = writer.finish()   // {"apnsId":"…","priority":10}
/// ```
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]
    private var needsComma = false

    /// Starts an object (`{`).
    public init(reservingCapacity capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    /// A writer holding no bytes at all (to take over another's buffer).
    private init(empty: Void) {
        bytes = []
    }

    /// Closes the object and returns its bytes.
    public consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    public mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        JSONString.append(value, to: &bytes)
    }

    public mutating func member(_ name: String, _ value: Int64?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func member(_ name: String, _ value: Int?) {
        member(name, value.map(Int64.init))
    }

    public mutating func member(_ name: String, _ value: Double?) {
        guard let value, value.isFinite else { return }
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func member(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A member whose value is JSON text the caller vouches for (a nested writer's bytes, a validated payload).
    public mutating func member(_ name: String, json value: [UInt8]?) {
        guard let value, !value.isEmpty else { return }
        key(name)
        bytes.append(contentsOf: value)
    }

    /// A member whose value is JSON text the caller vouches for, written straight from the string.
    public mutating func member(_ name: String, jsonText value: String) {
        guard !value.isEmpty else { return }
        key(name)
        var value = value
        value.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A member holding an object written by `body` in place (no buffer of its own).
    public mutating func member(_ name: String, object body: (inout JSONWriter) -> Void) {
        key(name)
        var nested = JSONWriter(empty: ())
        swap(&nested.bytes, &bytes)
        nested.bytes.append(UInt8(ascii: "{"))
        body(&nested)
        nested.bytes.append(UInt8(ascii: "}"))
        swap(&nested.bytes, &bytes)
    }

    /// A string member made of four parts (a path), escaped as one string, without joining them first.
    public mutating func member(_ name: String, joining parts: (String, String, String, String)) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        JSONString.appendContents(parts.0, to: &bytes)
        JSONString.appendContents(parts.1, to: &bytes)
        JSONString.appendContents(parts.2, to: &bytes)
        JSONString.appendContents(parts.3, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A member holding an array of JSON values the caller vouches for.
    public mutating func member(_ name: String, jsonArray values: [[UInt8]]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A member holding an array of strings.
    public mutating func member(_ name: String, strings values: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONString.append(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func key(_ name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        JSONString.append(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }
}
