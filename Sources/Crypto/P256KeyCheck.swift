// APNs Sandbox — the "is this an ES256 key?" check shared by the ES256 key types.
import CLibShims
import COpenSSL

/// Checks that an `EVP_PKEY` is an elliptic-curve key on the named curve P-256 (prime256v1,
/// secp256r1), the only curve ES256 allows (RFC 7518 §3.4).
enum P256KeyCheck {
    /// The curve names OpenSSL may report for P-256.
    private static let curveNames: Set<String> = ["prime256v1", "P-256", "secp256r1"]

    /// - Parameters:
    ///   - key: The key to inspect; only read.
    ///   - source: Names the key in error messages ("the private key PEM").
    /// - Throws: `CryptoError.unsupportedKey` naming the key type or curve found instead.
    static func require(_ key: OpaquePointer, source: String) throws {
        guard EVP_PKEY_is_a(key, "EC") == 1 else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            throw CryptoError.unsupportedKey("\(source) is a \(type) key; ES256 needs an EC key on curve P-256")
        }
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            throw CryptoError.unsupportedKey("\(source) is an EC key without a named curve; ES256 needs P-256")
        }
        let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard curveNames.contains(curve) else {
            throw CryptoError.unsupportedKey("\(source) is an EC key on curve \(curve); ES256 needs P-256 (prime256v1)")
        }
    }
}
