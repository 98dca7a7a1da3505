// APNs Sandbox — makes APNs provider authentication tokens (JWTs signed with ES256).
import Foundation

/// Makes APNs provider tokens, as a provider server does with its `.p8` key:
/// `base64url(header).base64url(claims).base64url(signature)` where the header is
/// `{"alg":"ES256","kid":keyID}`, the claims are `{"iss":teamID,"iat":issuedAt}` and the
/// signature is the 64-byte raw ES256 signature over the ASCII of the first two parts.
public enum ProviderTokenSigner {
    /// - Parameters:
    ///   - keyID: The 10-character key ID (`kid`).
    ///   - teamID: The 10-character team ID (`iss`).
    ///   - issuedAt: Seconds since the epoch (`iat`).
    ///   - key: The signing key.
    /// - Returns: The token, ready for `authorization: bearer <token>`.
    /// - Throws: `CryptoError.signing` when OpenSSL fails.
    public static func makeToken(keyID: String, teamID: String, issuedAt: Int64, key: ES256PrivateKey) throws -> String {
        let header = #"{"alg":"ES256","kid":\#(jsonString(keyID))}"#
        let claims = #"{"iss":\#(jsonString(teamID)),"iat":\#(issuedAt)}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// `text` as a JSON string literal (RFC 8259 §7), quotes included.
    static func jsonString(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                escaped += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}
