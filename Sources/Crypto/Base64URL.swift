// APNs Sandbox — the URL-safe base64 alphabet without padding that JWTs use (RFC 7515 §2).
import Foundation

/// Base64url without padding ("base64url" in RFC 7515 §2, RFC 4648 §5). Internal: the public one
/// for request parsing is `APNsProtocol.Base64URL`; this one only serves `ProviderTokenSigner`.
enum Base64URL {
    /// Encodes `bytes` with `-` and `_` for `+` and `/`, and no trailing `=`.
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Decodes unpadded (or padded) base64url text.
    /// - Returns: The bytes, or `nil` when `text` holds characters outside the alphabet or has an
    ///   impossible length (a remainder of 1 character modulo 4).
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = ""
        standard.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "-": standard.unicodeScalars.append("+")
            case "_": standard.unicodeScalars.append("/")
            case "+", "/": return nil
            default: standard.unicodeScalars.append(scalar)
            }
        }
        while standard.last == "=" { standard.removeLast() }
        switch standard.utf8.count % 4 {
        case 1: return nil
        case 2: standard += "=="
        case 3: standard += "="
        default: break
        }
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
