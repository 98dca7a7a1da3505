// APNs Sandbox — a tiny DER writer and a bounds-checked DER reader for hand-made extensions.

/// DER universal tags this module writes or reads.
enum DERTag {
    static let null: UInt8 = 0x05
    static let utf8String: UInt8 = 0x0C
    static let sequence: UInt8 = 0x30
}

/// Builds DER (ITU-T X.690) encodings of the few ASN.1 values the module writes by hand, such as
/// Apple's topic-list certificate extension.
struct DERWriter {
    /// The encoding so far.
    private(set) var bytes: [UInt8] = []

    /// Appends one element: tag, definite length (long form above 127 bytes), content.
    mutating func append(tag: UInt8, content: [UInt8]) {
        bytes.append(tag)
        bytes += Self.encodedLength(content.count)
        bytes += content
    }

    /// Appends a UTF8String.
    mutating func appendUTF8String(_ text: String) {
        append(tag: DERTag.utf8String, content: Array(text.utf8))
    }

    /// Appends NULL (`05 00`).
    mutating func appendNull() {
        append(tag: DERTag.null, content: [])
    }

    /// Appends a SEQUENCE whose elements `body` writes.
    mutating func appendSequence(_ body: (inout DERWriter) -> Void) {
        var inner = DERWriter()
        body(&inner)
        append(tag: DERTag.sequence, content: inner.bytes)
    }

    /// The DER length octets for `length`: one byte below 128, else `0x80 | n` and n big-endian
    /// bytes without leading zeros.
    static func encodedLength(_ length: Int) -> [UInt8] {
        precondition(length >= 0, "negative DER length")
        if length < 0x80 { return [UInt8(length)] }
        var octets: [UInt8] = []
        var remaining = length
        while remaining > 0 {
            octets.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(octets.count)] + octets
    }
}

/// Why `DERReader` rejected its input.
struct MalformedDER: Error, CustomStringConvertible {
    let description: String
}

/// Reads DER elements one after another from a byte buffer, checking every length against the
/// bytes that remain. Never traps: malformed input throws `MalformedDER`.
///
/// Only what DER allows is accepted: low tag numbers (`0x1F` high-tag form is rejected), definite
/// lengths in their shortest form, at most 4 length octets.
struct DERReader {
    /// One element: its identifier octet and its content octets.
    struct Element {
        var tag: UInt8
        var content: ArraySlice<UInt8>
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    /// Whether every byte has been read.
    var isAtEnd: Bool { position == bytes.endIndex }

    /// Reads the next element.
    /// - Throws: `MalformedDER` at the end of input, for a high tag number, an indefinite,
    ///   non-minimal or overlong length, or a length past the end of the input.
    mutating func readElement() throws -> Element {
        let tag = try readByte("tag")
        guard tag & 0x1F != 0x1F else { throw MalformedDER(description: "high tag numbers are not supported") }
        let first = try readByte("length")
        var length = Int(first)
        if first >= 0x80 {
            let count = Int(first & 0x7F)
            guard count != 0 else { throw MalformedDER(description: "indefinite length is not DER") }
            guard count <= 4 else { throw MalformedDER(description: "length of \(count) octets is too long") }
            length = 0
            for index in 0..<count {
                let octet = try readByte("length")
                guard index > 0 || octet != 0 else { throw MalformedDER(description: "length has a leading zero octet") }
                length = length << 8 | Int(octet)
            }
            guard length >= 0x80 else { throw MalformedDER(description: "long-form length \(length) below 128") }
        }
        guard length <= bytes.endIndex - position else {
            throw MalformedDER(description: "length \(length) exceeds the \(bytes.endIndex - position) remaining bytes")
        }
        let content = bytes[position..<(position + length)]
        position += length
        return Element(tag: tag, content: content)
    }

    private mutating func readByte(_ what: String) throws -> UInt8 {
        guard position < bytes.endIndex else { throw MalformedDER(description: "input ends inside a \(what)") }
        defer { position += 1 }
        return bytes[position]
    }
}
