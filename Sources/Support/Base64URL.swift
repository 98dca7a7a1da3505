// APNs Sandbox — base64url (RFC 4648 §5): JWT parts, HTTP2-Settings.

/// base64url encoding and decoding, as JWTs use it (RFC 7515: no padding) — the one codec of the sandbox:
/// provider tokens (APNsProtocol), the token signer (Crypto), HTTP2-Settings (HTTP).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, or 0xFF for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        return table
    }()

    /// Decodes base64url text.
    ///
    /// Padding is optional, but when present it must complete the last group of four. Characters of
    /// standard base64 (`+`, `/`), white space and non-zero unused trailing bits are rejected, so each
    /// byte string has exactly one accepted encoding (plus its padded form).
    /// - Parameter text: The encoded text.
    /// - Returns: The bytes, or nil when `text` is not valid base64url.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var utf8 = text.utf8[...]
        if utf8.count % 4 == 0, utf8.last == UInt8(ascii: "=") {
            utf8 = utf8.dropLast()
            if utf8.last == UInt8(ascii: "=") { utf8 = utf8.dropLast() }
        }
        guard utf8.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in utf8 {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return output
    }

    /// Decodes base64url text (see ``decode(_:)-(Substring)``).
    public static func decode(_ text: String) -> [UInt8]? {
        decode(text[...])
    }

    /// Encodes `bytes` as base64url without padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] as [UInt32] {
                output.append(alphabet[Int(group >> shift & 0x3F)])
            }
            index += 3
        }
        let remaining = bytes.count - index
        if remaining > 0 {
            var group = UInt32(bytes[index]) << 16
            if remaining == 2 { group |= UInt32(bytes[index + 1]) << 8 }
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            if remaining == 2 { output.append(alphabet[Int(group >> 6 & 0x3F)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
