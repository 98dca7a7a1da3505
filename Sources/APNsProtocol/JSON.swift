// APNs Sandbox — the one JSON tree: members in order, numbers as written (payloads, extensions, API bodies).
import Support

/// A JSON value that keeps object members in order and numbers as written.
///
/// `JSONSerialization` loses member order and rewrites numbers; a payload travels through the sandbox
/// (provider → store → extension → displayed content → API), so what nobody changed must come out as it
/// went in. Parsing is ``JSONReader``'s: strict RFC 8259 over UTF-8 with nesting bounded by ``maxDepth``.
public enum JSON: Sendable, Equatable {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    /// A number and its text as written (or as produced by ``number(_:)``).
    case number(String)
    case bool(Bool)
    case null

    public static let maxDepth = JSONReader.maxDepth

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.number(let a), .number(let b)): a == b || (Double(a) != nil && Double(a) == Double(b))
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    /// A number value from an integer.
    public static func number(_ value: Int) -> JSON { .number(String(value)) }

    /// A number value from a double (integral values without a fraction).
    public static func number(_ value: Double) -> JSON {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number(value.isFinite ? String(value) : "0")
    }

    // MARK: Access

    /// The value of the last member named `key` (later duplicates win, as in `JSONSerialization`).
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    public var members: [(String, JSON)]? {
        if case .object(let members) = self { members } else { nil }
    }

    public var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    public var double: Double? {
        if case .number(let text) = self { Double(text) } else { nil }
    }

    /// An integral number that fits `Int`.
    public var int: Int? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int(text) { return exact }
        guard let value = Double(text), value == value.rounded(), abs(value) < 9e15 else { return nil }
        return Int(value)
    }

    public var bool: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// Strings as they are, numbers and Booleans as their text; nil for containers and null.
    public var text: String? {
        switch self {
        case .string(let text): text
        case .number(let text): text
        case .bool(let value): value ? "true" : "false"
        default: nil
        }
    }

    /// Sets (replacing every member of that name) or appends `key`; no-op on non-objects.
    public mutating func set(_ key: String, _ value: JSON?) {
        guard case .object(var members) = self else { return }
        if let value {
            if let index = members.firstIndex(where: { $0.0 == key }) {
                members[index].1 = value
                members = members.enumerated().filter { $0.offset <= index || $0.element.0 != key }.map(\.element)
            } else {
                members.append((key, value))
            }
        } else {
            members.removeAll { $0.0 == key }
        }
        self = .object(members)
    }

    /// Strings, numbers and Booleans of an array as text (see ``text``); nil when this is not an array.
    public var texts: [String]? {
        guard case .array(let items) = self else { return nil }
        return items.compactMap(\.text)
    }

    // MARK: Parsing

    /// The input is not valid JSON.
    public struct ParseError: Error, CustomStringConvertible {
        /// Where the reader stopped: the byte offset at which the input stopped being valid.
        public var offset: Int
        public var description: String { "invalid JSON at byte \(offset)" }
    }

    /// Parses a whole document (any value at the root).
    public static func parse(_ text: String, maxDepth: Int = maxDepth) throws -> JSON {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    /// Parses a whole document (any value at the root) from UTF-8 bytes, nested at most `maxDepth`
    /// levels (client input never gets more than ``maxDepth``; documents the sandbox wrapped around
    /// client JSON, such as event envelopes, may need a few more).
    public static func parse(_ bytes: [UInt8], maxDepth: Int = maxDepth) throws -> JSON {
        try readDocument(bytes, maxDepth: maxDepth) { reader in try reader.readTree() }
    }

    /// A member of a document's root object with the text it had.
    public struct RootMember: Sendable {
        public var key: String
        public var value: JSON
        /// `"key":value` exactly as received (white space around the colon dropped).
        public var text: String
    }

    /// The members of a document whose root must be an object, in order, duplicates included.
    public static func rootMembers(of bytes: [UInt8]) throws -> [RootMember] {
        try readDocument(bytes, maxDepth: maxDepth) { reader in try reader.readRootMembers() }
    }

    /// Reads one whole document with `body` (nothing but white space may follow); failures become a
    /// ``ParseError`` at the reader's position.
    private static func readDocument<Value>(
        _ bytes: [UInt8], maxDepth: Int, _ body: (inout JSONReader) throws -> Value
    ) throws -> Value {
        var reader = JSONReader(bytes, maxDepth: maxDepth)
        do {
            let value = try body(&reader)
            try reader.readEnd()
            return value
        } catch {
            throw ParseError(offset: reader.position)
        }
    }

    // MARK: Serialization

    /// Compact JSON text (no white space), members in order, non-ASCII as UTF-8 except U+2028 and U+2029,
    /// which are escaped: this text goes to extensions as one line, and some line readers (JavaScript's,
    /// Python's `splitlines`) break lines there.
    public var serialized: String {
        String(decoding: serializedBytes, as: UTF8.self)
    }

    /// ``serialized`` as UTF-8 bytes.
    public var serializedBytes: [UInt8] {
        var output: [UInt8] = []
        write(to: &output)
        return output
    }

    private func write(to output: inout [UInt8]) {
        switch self {
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                JSONString.append(member.0, to: &output, escapingLineSeparators: true)
                output.append(UInt8(ascii: ":"))
                member.1.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (position, item) in items.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                item.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .string(let text): JSONString.append(text, to: &output, escapingLineSeparators: true)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .null: output.append(contentsOf: "null".utf8)
        }
    }
}
