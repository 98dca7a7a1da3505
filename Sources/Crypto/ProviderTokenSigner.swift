// APNs Sandbox — makes APNs provider authentication tokens (JWTs signed with ES256).
import Foundation
import Support

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
        let header = #"{"alg":"ES256","kid":\#(JSONString.quoted(keyID))}"#
        let claims = #"{"iss":\#(JSONString.quoted(teamID)),"iat":\#(issuedAt)}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
