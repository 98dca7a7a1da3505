// APNs Sandbox — JSON string literals (RFC 8259 §7), the one escaper every module uses.

/// Writes strings as JSON string literals: quotes, backslashes and control characters escaped, everything
/// else (non-ASCII included) as UTF-8.
public enum JSONString {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `value` as a quoted, escaped JSON string; with `escapingLineSeparators`, U+2028 and U+2029
    /// are written as `\u2028` and `\u2029` (for text that line readers split on them).
    public static func append(_ value: String, to bytes: inout [UInt8], escapingLineSeparators: Bool = false) {
        bytes.append(UInt8(ascii: "\""))
        appendContents(value, to: &bytes, escapingLineSeparators: escapingLineSeparators)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends what ``append(_:to:escapingLineSeparators:)`` writes between the quotes (to write one string
    /// literal from several parts). Allocates nothing but the growth of `bytes`.
    public static func appendContents(_ value: String, to bytes: inout [UInt8], escapingLineSeparators: Bool = false) {
        var value = value
        value.withUTF8 { utf8 in
            // Most strings (ids, tokens, topics, plain text) need no escape: one copy instead of a byte loop.
            guard utf8.contains(where: { needsEscape($0) || (escapingLineSeparators && $0 == 0xE2) }) else {
                bytes.append(contentsOf: utf8)
                return
            }
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                index += 1
                // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
                if escapingLineSeparators, byte == 0xE2, index + 1 < utf8.count, utf8[index] == 0x80,
                    utf8[index + 1] == 0xA8 || utf8[index + 1] == 0xA9
                {
                    appendASCII(utf8[index + 1] == 0xA8 ? "\\u2028" : "\\u2029", to: &bytes)
                    index += 2
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                case 0x0A:
                    appendASCII("\\n", to: &bytes)
                case 0x0D:
                    appendASCII("\\r", to: &bytes)
                case 0x09:
                    appendASCII("\\t", to: &bytes)
                case 0..<0x20:
                    appendASCII("\\u00", to: &bytes)
                    bytes.append(hexDigits[Int(byte >> 4)])
                    bytes.append(hexDigits[Int(byte & 0x0F)])
                default:
                    bytes.append(byte)
                }
            }
        }
    }

    private static func appendASCII(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `value` as a quoted, escaped JSON string.
    public static func quoted(_ value: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 2)
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}
