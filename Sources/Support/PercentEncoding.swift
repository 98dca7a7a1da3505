// APNs Sandbox — percent-encoding of one URL path segment or query value.

/// RFC 3986 percent-encoding, the one implementation the server's links and the command line's requests share.
public enum PercentEncoding {
    /// Every byte but the unreserved characters (RFC 3986 §2.3: ASCII letters, digits, `-._~`) as `%XX`,
    /// so that the result is one path segment or one query value.
    public static func segment(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(hex[Int(byte >> 4)])
                result.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return result
    }
}
