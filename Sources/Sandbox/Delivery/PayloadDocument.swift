// APNs Sandbox — a small JSON tree for the payload fields `Payload` does not carry.

/// A JSON value, as the delivery layer needs it to read alert loc keys, `target-content-id`,
/// `relevance-score` and the custom keys beside `aps`.
///
/// Payloads reaching delivery were validated as strict JSON by the provider endpoint; this parser is
/// strict as well (RFC 8259, nesting bounded) and returns nil on anything else rather than guessing.
indirect enum JSONValue: Sendable, Equatable {
    case object([Member])
    case array([JSONValue])
    case string(String)
    /// A number and its text as written.
    case number(Double, text: String)
    case bool(Bool)
    case null

    struct Member: Sendable, Equatable {
        var key: String
        var value: JSONValue
    }

    /// The value of the last member named `key` (later duplicates win, as in `JSONSerialization`).
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    var number: Double? {
        if case .number(let value, _) = self { value } else { nil }
    }

    /// Strings as they are, numbers and Booleans as their text; other values are dropped.
    var stringArray: [String]? {
        guard case .array(let items) = self else { return nil }
        return items.compactMap { item in
            switch item {
            case .string(let text): text
            case .number(_, let text): text
            case .bool(let value): value ? "true" : "false"
            default: nil
            }
        }
    }
}

/// A payload's root object: its members, each with the exact text it had in the body.
struct PayloadDocument: Sendable {
    struct Member: Sendable {
        var key: String
        var value: JSONValue
        /// `"key":value` exactly as received (white space around the colon dropped).
        var text: String
    }

    var members: [Member]

    /// The `aps` object (the last one when repeated).
    var aps: JSONValue? { members.last(where: { $0.key == "aps" })?.value }

    /// The custom keys (everything beside `aps`) as a JSON object, values exactly as received;
    /// a repeated key keeps its last value, at the position of that last occurrence. `{}` when there are none.
    var userInfoJSON: String {
        var seen = Set<String>()
        var kept: [String] = []
        for member in members.reversed() where member.key != "aps" && seen.insert(member.key).inserted {
            kept.append(member.text)
        }
        return "{" + kept.reversed().joined(separator: ",") + "}"
    }

    /// Parses a payload body; nil when it is not a strict JSON object.
    init?(parsing text: String) {
        var parser = JSONTreeParser(Array(text.utf8))
        guard let members = try? parser.parseRoot() else { return nil }
        self.members = members.map { Member(key: $0.key, value: $0.value, text: $0.text) }
    }
}

/// A strict recursive-descent JSON parser over UTF-8 bytes.
private struct JSONTreeParser {
    struct Failure: Error {}

    static let maxDepth = 64
    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The root object's members with their `"key":value` text.
    mutating func parseRoot() throws -> [(key: String, value: JSONValue, text: String)] {
        skipWhitespace()
        try expect(UInt8(ascii: "{"))
        var members: [(key: String, value: JSONValue, text: String)] = []
        skipWhitespace()
        if !consume(UInt8(ascii: "}")) {
            repeat {
                skipWhitespace()
                let keyStart = index
                let key = try parseString()
                let keyText = String(decoding: bytes[keyStart..<index], as: UTF8.self)
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                let valueStart = index
                let value = try parseValue()
                let valueText = String(decoding: bytes[valueStart..<index], as: UTF8.self)
                members.append((key, value, keyText + ":" + valueText))
                skipWhitespace()
            } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"))
        }
        skipWhitespace()
        guard index == bytes.count else { throw Failure() }
        return members
    }

    private mutating func parseValue() throws -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw Failure() }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try enter()
            index += 1
            var members: [JSONValue.Member] = []
            skipWhitespace()
            if !consume(UInt8(ascii: "}")) {
                repeat {
                    skipWhitespace()
                    let key = try parseString()
                    skipWhitespace()
                    try expect(UInt8(ascii: ":"))
                    members.append(JSONValue.Member(key: key, value: try parseValue()))
                    skipWhitespace()
                } while consume(UInt8(ascii: ","))
                try expect(UInt8(ascii: "}"))
            }
            depth -= 1
            return .object(members)
        case UInt8(ascii: "["):
            try enter()
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if !consume(UInt8(ascii: "]")) {
                repeat {
                    items.append(try parseValue())
                    skipWhitespace()
                } while consume(UInt8(ascii: ","))
                try expect(UInt8(ascii: "]"))
            }
            depth -= 1
            return .array(items)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            return try parseNumber()
        }
    }

    private mutating func parseNumber() throws -> JSONValue {
        let start = index
        _ = consume(UInt8(ascii: "-"))
        guard isDigit(at: index) else { throw Failure() }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while isDigit(at: index) { index += 1 }
        }
        if consume(UInt8(ascii: ".")) {
            guard isDigit(at: index) else { throw Failure() }
            while isDigit(at: index) { index += 1 }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard isDigit(at: index) else { throw Failure() }
            while isDigit(at: index) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text) else { throw Failure() }
        return .number(value, text: text)
    }

    private mutating func parseString() throws -> String {
        try expect(UInt8(ascii: "\""))
        var scalars = String.UnicodeScalarView()
        var start = index
        while true {
            guard index < bytes.count else { throw Failure() }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try appendUTF8(bytes[start..<index], to: &scalars)
                index += 1
                return String(scalars)
            } else if byte == UInt8(ascii: "\\") {
                try appendUTF8(bytes[start..<index], to: &scalars)
                index += 1
                scalars.append(try parseEscape())
                start = index
            } else if byte < 0x20 {
                throw Failure()
            } else {
                index += 1
            }
        }
    }

    /// Appends validated UTF-8 (no overlong forms or surrogates: the standard decoder rejects them).
    private func appendUTF8(_ slice: ArraySlice<UInt8>, to scalars: inout String.UnicodeScalarView) throws {
        var iterator = slice.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): scalars.append(scalar)
            case .emptyInput: return
            case .error: throw Failure()
            }
        }
    }

    private mutating func parseEscape() throws -> Unicode.Scalar {
        guard index < bytes.count else { throw Failure() }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(letter)
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try hex4()
            switch unit {
            case 0xD800...0xDBFF:
                guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")) else { throw Failure() }
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low),
                    let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                else { throw Failure() }
                return scalar
            case 0xDC00...0xDFFF:
                throw Failure()
            default:
                guard let scalar = Unicode.Scalar(unit) else { throw Failure() }
                return scalar
            }
        default:
            throw Failure()
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw Failure() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw Failure()
            }
            value = value << 4 | UInt32(nibble)
            index += 1
        }
        return value
    }

    private func isDigit(at position: Int) -> Bool {
        position < bytes.count && bytes[position] >= UInt8(ascii: "0") && bytes[position] <= UInt8(ascii: "9")
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard consume(byte) else { throw Failure() }
    }

    private mutating func literal(_ word: String) throws {
        for byte in word.utf8 {
            guard consume(byte) else { throw Failure() }
        }
    }

    private mutating func enter() throws {
        depth += 1
        guard depth <= Self.maxDepth else { throw Failure() }
    }
}
