// APNs Sandbox — byte-level ASCII helpers shared by the validators.

/// Small byte classifiers used on the push hot path, so no validator needs `Character` or Foundation.
enum ASCII {
    /// `byte` with `A`–`Z` mapped to `a`–`z`; every other byte unchanged.
    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
    }

    /// True for `A`–`Z`.
    @inline(__always)
    static func isUppercase(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")
    }

    /// True when `text` equals `lowercaseLiteral` ignoring ASCII case; the literal must be lowercase.
    static func equalsIgnoringCase<Text: StringProtocol>(_ text: Text, _ lowercaseLiteral: String) -> Bool {
        var other = lowercaseLiteral.utf8.makeIterator()
        for byte in text.utf8 {
            guard let expected = other.next(), lowercased(byte) == expected else { return false }
        }
        return other.next() == nil
    }
}
