// APNs Sandbox — an ordered JSON tree for extension configuration, protocol messages and userInfo.

/// A JSON value that keeps object members in order and numbers as written.
///
/// `JSONSerialization` loses member order and rewrites numbers; extension content travels through this
/// runtime (payload → request → extension → content → userInfo), so what the extension did not change must
/// come out as it went in. Parsing is strict RFC 8259 over UTF-8 with nesting bounded by ``maxDepth``.
enum JSON: Sendable, Equatable {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    /// A number and its text as written (or as produced by ``number(_:)``).
    case number(String)
    case bool(Bool)
    case null

    static let maxDepth = 64

    static func == (lhs: JSON, rhs: JSON) -> Bool {
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
    static func number(_ value: Int) -> JSON { .number(String(value)) }

    /// A number value from a double (integral values without a fraction).
    static func number(_ value: Double) -> JSON {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number(value.isFinite ? String(value) : "0")
    }

    // MARK: Access

    /// The value of the last member named `key` (later duplicates win, as in `JSONSerialization`).
    subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    var members: [(String, JSON)]? {
        if case .object(let members) = self { members } else { nil }
    }

    var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    var double: Double? {
        if case .number(let text) = self { Double(text) } else { nil }
    }

    /// An integral number that fits `Int`.
    var int: Int? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int(text) { return exact }
        guard let value = Double(text), value == value.rounded(), abs(value) < 9e15 else { return nil }
        return Int(value)
    }

    var bool: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// Strings as they are, numbers and Booleans as their text; nil for containers and null.
    var text: String? {
        switch self {
        case .string(let text): text
        case .number(let text): text
        case .bool(let value): value ? "true" : "false"
        default: nil
        }
    }

    /// Sets (replacing every member of that name) or appends `key`; no-op on non-objects.
    mutating func set(_ key: String, _ value: JSON?) {
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

    // MARK: Parsing

    struct ParseError: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "invalid JSON at byte \(offset)" }
    }

    /// Parses a whole document (any value at the root).
    static func parse(_ text: String) throws -> JSON { try parse(Array(text.utf8)) }

    /// Parses a whole document (any value at the root) from UTF-8 bytes.
    static func parse(_ bytes: [UInt8]) throws -> JSON {
        var parser = Parser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw ParseError(offset: parser.index) }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D
                || bytes[index] == 0x09
            {
                index += 1
            }
        }

        func failure() -> ParseError { ParseError(offset: index) }

        mutating func value(depth: Int) throws -> JSON {
            skipWhitespace()
            guard index < bytes.count else { throw failure() }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                guard depth < JSON.maxDepth else { throw failure() }
                index += 1
                var members: [(String, JSON)] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                }
                while true {
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure() }
                    let key = try string()
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure() }
                    index += 1
                    members.append((key, try value(depth: depth + 1)))
                    skipWhitespace()
                    guard index < bytes.count else { throw failure() }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "}") else { throw failure() }
                    index += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                guard depth < JSON.maxDepth else { throw failure() }
                index += 1
                var items: [JSON] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(items)
                }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipWhitespace()
                    guard index < bytes.count else { throw failure() }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "]") else { throw failure() }
                    index += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
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
                return .number(try number())
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw failure() }
            let matches = word.withUTF8Buffer { expected in
                (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
            }
            guard matches else { throw failure() }
            index += count
        }

        mutating func number() throws -> String {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
                return index - from
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw failure() }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits() > 0 else { throw failure() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw failure() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard digits() > 0 else { throw failure() }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws -> String {
            index += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var runStart = index
            func flushRun() throws {
                guard runStart < index else { return }
                guard let run = String(validating: bytes[runStart..<index], as: UTF8.self) else { throw failure() }
                scalars.append(contentsOf: run.unicodeScalars)
            }
            while true {
                guard index < bytes.count else { throw failure() }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    try flushRun()
                    index += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { throw failure() }
                if byte != UInt8(ascii: "\\") {
                    index += 1
                    continue
                }
                try flushRun()
                index += 1
                guard index < bytes.count else { throw failure() }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    let high = try hex4()
                    if (0xD800..<0xDC00).contains(high) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw failure() }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low),
                            let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                        else { throw failure() }
                        scalars.append(scalar)
                    } else {
                        guard let scalar = Unicode.Scalar(high) else { throw failure() }
                        scalars.append(scalar)
                    }
                default:
                    throw failure()
                }
                runStart = index
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw failure() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: throw failure()
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }

    // MARK: Serialization

    /// Compact JSON text (no white space), members in order, non-ASCII as UTF-8.
    var serialized: String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .object(let members):
            output += "{"
            for (position, member) in members.enumerated() {
                if position > 0 { output += "," }
                Self.writeString(member.0, to: &output)
                output += ":"
                member.1.write(to: &output)
            }
            output += "}"
        case .array(let items):
            output += "["
            for (position, item) in items.enumerated() {
                if position > 0 { output += "," }
                item.write(to: &output)
            }
            output += "]"
        case .string(let text): Self.writeString(text, to: &output)
        case .number(let text): output += text
        case .bool(let value): output += value ? "true" : "false"
        case .null: output += "null"
        }
    }

    private static func writeString(_ text: String, to output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{2028}": output += "\\u2028"
            case "\u{2029}": output += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}
