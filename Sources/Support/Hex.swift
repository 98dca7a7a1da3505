// APNs Sandbox — bytes as lowercase hex digits.

/// Lowercase hexadecimal text of bytes (tokens, fingerprints).
public enum Hex {
    @usableFromInline static let digits = Array("0123456789abcdef".utf8)

    /// Two lowercase hex digits per byte (inlinable: specialised for the caller's sequence).
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The value of one hex digit of either case (`0`–`9`, `a`–`f`, `A`–`F`); nil for any other byte. The one
    /// hex-digit decoder of the project (device tokens, `\u` escapes, percent-encoding, chunk sizes).
    @inlinable @inline(__always)
    public static func digitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte &- 0x30
        case 0x61...0x66: byte &- 0x61 &+ 10
        case 0x41...0x46: byte &- 0x41 &+ 10
        default: nil
        }
    }

    /// The value of one lowercase hex digit (`0`–`9`, `a`–`f`); nil for any other byte, upper case included.
    @inlinable
    public static func lowercaseDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
