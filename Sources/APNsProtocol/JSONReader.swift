// APNs Sandbox — a strict, allocation-light JSON pull parser for payloads and JWT parts.
import Support

/// A strict RFC 8259 JSON reader over UTF-8 bytes that extracts only what its caller asks for.
///
/// ### Overview
/// Payloads and JWT parts are parsed on every push, so instead of building a whole tree (as
/// `JSONSerialization` does) the caller walks objects with ``readObject(_:)`` and reads or skips each
/// member's value. Skipped values are still fully validated. The whole input is checked: UTF-8 validity
/// (no overlong forms, no surrogates), string escapes (paired `\u` surrogates only), the number grammar,
/// no trailing commas, no byte-order mark, nothing after the root value, and nesting of at most
/// ``maxDepth`` levels so that client input cannot exhaust the stack.
///
/// ### Contract
/// Each member callback must consume exactly one value: ``readScalar()``, ``skipValue()`` or a nested
/// ``readObject(_:)``. Duplicate keys are passed on in order, so "last one wins" is up to the caller.
struct JSONReader {
    /// The input is not valid JSON, or not of the shape the caller expected.
    struct Failure: Error {}

    /// A value as read by ``readScalar()``; objects and arrays are validated, skipped and reported by kind.
    enum Scalar: Equatable {
        case string(String)
        /// A number without fraction or exponent that fits `Int64`.
        case integer(Int64)
        /// Any other number.
        case number
        case bool(Bool)
        case null
        case object
        case array
    }

    /// The deepest accepted nesting of objects and arrays.
    static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    private let depthLimit: Int

    /// A reader positioned at the start of `bytes`, accepting nesting up to `maxDepth` levels
    /// (more only for text the sandbox wrote itself around client JSON, never for client input).
    init(_ bytes: [UInt8], maxDepth: Int = JSONReader.maxDepth) {
        self.bytes = bytes
        self.depthLimit = maxDepth
    }

    /// How far the reader got: the byte offset of the next unread byte (where a failure was found).
    var position: Int { index }

    /// Reads a whole document whose root must be an object, calling `member` for each member.
    /// - Throws: ``Failure`` when the document is not a valid JSON object, or `member` throws.
    mutating func readDocument(_ member: (inout JSONReader, String) throws -> Void) throws {
        try readObject(member)
        skipWhitespace()
        guard index == bytes.count else { throw Failure() }
    }

    /// True when the next value is an object (leading white space is skipped).
    mutating func nextIsObject() -> Bool {
        skipWhitespace()
        return index < bytes.count && bytes[index] == UInt8(ascii: "{")
    }

    /// Reads an object, calling `member` with each key; the callback must consume the member's value.
    /// - Throws: ``Failure`` when the next value is not a valid object, or `member` throws.
    mutating func readObject(_ member: (inout JSONReader, String) throws -> Void) throws {
        try enter(UInt8(ascii: "{"))
        skipWhitespace()
        if consume(UInt8(ascii: "}")) {
            depth -= 1
            return
        }
        repeat {
            skipWhitespace()
            guard case .string(let key) = try readString(keep: true) else { throw Failure() }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw Failure() }
            try member(&self, key)
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        guard consume(UInt8(ascii: "}")) else { throw Failure() }
        depth -= 1
    }

    /// Reads the next value; strings and integers come back decoded, containers validated and skipped.
    /// - Throws: ``Failure`` when the next value is not valid JSON.
    mutating func readScalar() throws -> Scalar {
        try readValue(keep: true)
    }

    /// Validates and skips the next value.
    /// - Throws: ``Failure`` when the next value is not valid JSON.
    mutating func skipValue() throws {
        _ = try readValue(keep: false)
    }

    // MARK: - Values

    private mutating func readValue(keep: Bool) throws -> Scalar {
        skipWhitespace()
        guard index < bytes.count else { throw Failure() }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try readObject { reader, _ in try reader.skipValue() }
            return .object
        case UInt8(ascii: "["):
            try skipArray()
            return .array
        case UInt8(ascii: "\""):
            return try readString(keep: keep)
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        default:
            return try readNumber()
        }
    }

    private mutating func skipArray() throws {
        try readArray { reader in try reader.skipValue() }
    }

    /// Reads an array, calling `element` for each item; the callback must consume exactly one value.
    /// - Throws: ``Failure`` when the next value is not a valid array, or `element` throws.
    mutating func readArray(_ element: (inout JSONReader) throws -> Void) throws {
        try enter(UInt8(ascii: "["))
        skipWhitespace()
        if consume(UInt8(ascii: "]")) {
            depth -= 1
            return
        }
        repeat {
            try element(&self)
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        guard consume(UInt8(ascii: "]")) else { throw Failure() }
        depth -= 1
    }

    // MARK: - Trees

    /// Reads the next value whole: objects with their members in order (duplicates kept), numbers as written.
    /// - Throws: ``Failure`` when the next value is not valid JSON.
    mutating func readTree() throws -> JSON {
        skipWhitespace()
        guard index < bytes.count else { throw Failure() }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            var members: [(String, JSON)] = []
            try readObject { reader, key in members.append((key, try reader.readTree())) }
            return .object(members)
        case UInt8(ascii: "["):
            var items: [JSON] = []
            try readArray { reader in items.append(try reader.readTree()) }
            return .array(items)
        case UInt8(ascii: "\""):
            guard case .string(let text) = try readString(keep: true) else { throw Failure() }
            return .string(text)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            guard case .bool(let value) = try readValue(keep: false) else { return .null }
            return .bool(value)
        default:
            let start = index
            _ = try readNumber()
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }
    }

    /// The members of the root object with their `"key":value` text as received (see ``JSON/rootMembers(of:)``).
    mutating func readRootMembers() throws -> [JSON.RootMember] {
        try enter(UInt8(ascii: "{"))
        var members: [JSON.RootMember] = []
        skipWhitespace()
        if !consume(UInt8(ascii: "}")) {
            repeat {
                skipWhitespace()
                let keyStart = index
                guard case .string(let key) = try readString(keep: true) else { throw Failure() }
                let keyEnd = index
                skipWhitespace()
                guard consume(UInt8(ascii: ":")) else { throw Failure() }
                skipWhitespace()
                let valueStart = index
                let value = try readTree()
                let text = String(decoding: bytes[keyStart..<keyEnd], as: UTF8.self) + ":"
                    + String(decoding: bytes[valueStart..<index], as: UTF8.self)
                members.append(JSON.RootMember(key: key, value: value, text: text))
                skipWhitespace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "}")) else { throw Failure() }
        }
        depth -= 1
        return members
    }

    /// Checks that nothing but white space follows.
    mutating func readEnd() throws {
        skipWhitespace()
        guard index == bytes.count else { throw Failure() }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func readNumber() throws -> Scalar {
        let negative = consume(UInt8(ascii: "-"))
        guard let first = digit(at: index) else { throw Failure() }
        // Accumulate towards negative numbers so that Int64.min fits.
        var value = -Int64(first)
        var fits = true
        index += 1
        if first != 0 {
            while let next = digit(at: index) {
                if fits {
                    let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = shifted.subtractingReportingOverflow(Int64(next))
                    fits = !overflow1 && !overflow2
                    value = sum
                }
                index += 1
            }
        }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            try skipDigits()
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try skipDigits()
        }
        guard isInteger, fits else { return .number }
        if negative { return .integer(value) }
        guard value != .min else { return .number }
        return .integer(-value)
    }

    /// One or more digits.
    private mutating func skipDigits() throws {
        guard digit(at: index) != nil else { throw Failure() }
        while digit(at: index) != nil { index += 1 }
    }

    private func digit(at position: Int) -> UInt8? {
        guard position < bytes.count else { return nil }
        let byte = bytes[position] &- UInt8(ascii: "0")
        return byte < 10 ? byte : nil
    }

    // MARK: - Strings

    /// Reads a string; when `keep` is false it is only validated and `.null` is returned.
    private mutating func readString(keep: Bool) throws -> Scalar {
        guard consume(UInt8(ascii: "\"")) else { throw Failure() }
        var start = index
        var unescaped: [UInt8]?
        while true {
            guard index < bytes.count else { throw Failure() }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                break
            } else if byte == UInt8(ascii: "\\") {
                if keep {
                    if unescaped == nil { unescaped = [] }
                    unescaped?.append(contentsOf: bytes[start..<index])
                }
                index += 1
                let scalar = try readEscape()
                if keep {
                    UTF8.encode(scalar) { unescaped?.append($0) }
                }
                start = index
            } else if byte < 0x20 {
                throw Failure()
            } else if byte < 0x80 {
                index += 1
            } else {
                index += try utf8SequenceLength(at: index)
            }
        }
        let end = index
        index += 1
        guard keep else { return .null }
        guard var text = unescaped else { return .string(String(decoding: bytes[start..<end], as: UTF8.self)) }
        text.append(contentsOf: bytes[start..<end])
        return .string(String(decoding: text, as: UTF8.self))
    }

    /// The character after a backslash (at `index`); `index` ends past the escape.
    private mutating func readEscape() throws -> Unicode.Scalar {
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
            let unit = try readHex4()
            switch unit {
            case 0xD800...0xDBFF:
                guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")) else { throw Failure() }
                let low = try readHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw Failure() }
                let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                guard let scalar = Unicode.Scalar(value) else { throw Failure() }
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

    private mutating func readHex4() throws -> UInt16 {
        guard index + 4 <= bytes.count else { throw Failure() }
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let nibble = Hex.digitValue(bytes[index]) else { throw Failure() }
            value = value << 4 | UInt16(nibble)
            index += 1
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence starting at `position` (Unicode table 3-7).
    private func utf8SequenceLength(at position: Int) throws -> Int {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw Failure()
        }
        guard position + length <= bytes.count, secondRange.contains(bytes[position + 1]) else { throw Failure() }
        for offset in 2..<length where bytes[position + offset] & 0xC0 != 0x80 {
            throw Failure()
        }
        return length
    }

    // MARK: - Tokens

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` when it is next (no white space is skipped).
    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func expect(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw Failure() }
        let matches = literal.withUTF8Buffer { bytes[index..<index + count].elementsEqual($0) }
        guard matches else { throw Failure() }
        index += count
    }

    private mutating func enter(_ opener: UInt8) throws {
        skipWhitespace()
        guard consume(opener) else { throw Failure() }
        depth += 1
        guard depth <= depthLimit else { throw Failure() }
    }
}
