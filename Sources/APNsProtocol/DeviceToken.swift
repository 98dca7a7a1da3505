// APNs Sandbox — a device token as it appears in `:path`.
import Support

/// A device token: the hex form used in `/3/device/<token>`, stored in lower case.
///
/// Apple says not to assume a token size (Simulator tokens are longer than device tokens), so any
/// whole number of bytes from 16 to 200 is accepted: 32 to 400 hex digits of either case.
/// Two tokens are equal when their bytes are equal, whatever the case they arrived in.
public struct DeviceToken: Sendable, Hashable, CustomStringConvertible {
    /// The shortest accepted token, in bytes.
    public static let minimumByteCount = 16
    /// The longest accepted token, in bytes.
    public static let maximumByteCount = 200

    /// The token as lowercase hex digits.
    public let hex: String

    /// Parses a hex token of either case.
    /// - Parameter hex: An even number of hex digits, 32 to 400 of them, nothing else.
    /// - Returns: nil for odd lengths, non-hex characters or a length out of range.
    public init?(hex: String) {
        // Stored tokens are lowercase already: checked in place, they keep their string (no copy).
        var hex = hex
        if hex.withUTF8({ Self.isLowercaseToken($0) }) {
            self.hex = hex
            return
        }
        guard let text = hex.withUTF8({ Self.lowercasedHex($0[...]) }) else { return nil }
        self.hex = text
    }

    /// Parses a hex token of either case from part of a larger string, such as `:path`.
    /// - Parameter hex: An even number of hex digits, 32 to 400 of them, nothing else.
    /// - Returns: nil for odd lengths, non-hex characters or a length out of range.
    public init?(hex: Substring) {
        let parsed = hex.utf8.withContiguousStorageIfAvailable { Self.lowercasedHex($0[...]) }
        guard let text = parsed ?? Array(hex.utf8).withUnsafeBufferPointer({ Self.lowercasedHex($0[...]) }) else {
            return nil
        }
        self.hex = text
    }

    /// A token already checked and lowercased by ``lowercasedHex(_:)``.
    init(checkedHex: String) {
        hex = checkedHex
    }

    /// True when `bytes` are a valid token in lowercase (as ``hex`` holds it).
    static func isLowercaseToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard count % 2 == 0, count >= 2 * minimumByteCount, count <= 2 * maximumByteCount else { return false }
        for byte in bytes where Hex.digitValue(byte) == nil || ASCII.isUppercase(byte) { return false }
        return true
    }

    /// `bytes` lowercased as a string when they form a valid token, else nil: one pass that validates
    /// and writes straight into the new string's storage.
    static func lowercasedHex(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String? {
        let count = bytes.count
        guard count % 2 == 0, count >= 2 * minimumByteCount, count <= 2 * maximumByteCount else { return nil }
        var valid = true
        let text = String(unsafeUninitializedCapacity: count) { buffer in
            var written = 0
            for byte in bytes {
                guard Hex.digitValue(byte) != nil else {
                    valid = false
                    break
                }
                buffer[written] = ASCII.lowercased(byte)
                written += 1
            }
            return written
        }
        return valid ? text : nil
    }

    /// The token's bytes.
    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for byte in hex.utf8 {
            // Every byte is a hex digit: checked in init.
            let value = Hex.digitValue(byte) ?? 0
            if let pending = high {
                result.append(pending << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return result
    }

    /// The first 8 hex digits and an ellipsis: logs never carry full device tokens.
    public var description: String {
        "\(hex.prefix(8))…"
    }
}
