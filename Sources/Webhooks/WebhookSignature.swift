// APNs Sandbox — Standard Webhooks signing: secrets, headers, verification.
import Crypto
import Foundation

/// Signs webhook requests as the Standard Webhooks specification says
/// (https://www.standardwebhooks.com, "Signature scheme"):
///
/// - `webhook-id`: the message id (the same on every attempt),
/// - `webhook-timestamp`: Unix seconds at the attempt (signed afresh on every attempt),
/// - `webhook-signature`: `v1,` + base64 of HMAC-SHA256(key, `"{id}.{timestamp}.{body}"`), where the key
///   is the base64 part of the `whsec_…` secret, decoded.
public enum WebhookSignature {
    public static let secretPrefix = "whsec_"

    /// A new secret: `whsec_` + base64 of 24 random bytes (the length common Standard Webhooks
    /// libraries generate).
    public static func generateSecret() -> String {
        secretPrefix + Data(SecureRandom.bytes(24)).base64EncodedString()
    }

    /// The signing key of a `whsec_…` secret, or nil when it is not one (a key of 24–64 bytes).
    public static func key(ofSecret secret: String) -> [UInt8]? {
        guard secret.hasPrefix(secretPrefix),
            let data = Data(base64Encoded: String(secret.dropFirst(secretPrefix.count))),
            (24...64).contains(data.count)
        else { return nil }
        return [UInt8](data)
    }

    /// The `webhook-signature` header value for one attempt.
    public static func signature(key: [UInt8], messageID: String, timestamp: Int64, body: [UInt8]) -> String {
        var signed = Array("\(messageID).\(timestamp).".utf8)
        signed.append(contentsOf: body)
        return "v1," + Data(HMACSHA256.authenticationCode(key: key, message: signed)).base64EncodedString()
    }

    /// The three headers of one attempt.
    public static func headers(key: [UInt8], messageID: String, timestamp: Int64, body: [UInt8]) -> [(String, String)] {
        [
            ("webhook-id", messageID),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(key: key, messageID: messageID, timestamp: timestamp, body: body)),
        ]
    }

    /// Whether one of the space-separated `v1,…` signatures in `header` is valid for the message (a
    /// receiver's check, used by tests and the test receiver; compares in constant time).
    public static func verify(
        secret: String, messageID: String, timestamp: String, body: [UInt8], header: String
    ) -> Bool {
        guard let key = key(ofSecret: secret), let seconds = Int64(timestamp) else { return false }
        let expected = Array(signature(key: key, messageID: messageID, timestamp: seconds, body: body).utf8)
        return header.split(separator: " ").contains { candidate in
            let bytes = Array(candidate.utf8)
            guard bytes.count == expected.count else { return false }
            var difference: UInt8 = 0
            for (a, b) in zip(bytes, expected) { difference |= a ^ b }
            return difference == 0
        }
    }
}
