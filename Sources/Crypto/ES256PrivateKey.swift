// APNs Sandbox — ES256 (ECDSA P-256 + SHA-256) signing keys, like Apple's .p8 auth keys.
import CLibShims
import COpenSSL

/// A P-256 private key that signs provider tokens (the CLI `token` command, tests, demo config).
///
/// `@unchecked Sendable` because the wrapped `PrivateKey` (one `EVP_PKEY`) is never mutated after
/// `init` and OpenSSL 3 allows concurrent signing with one key; each `sign` call uses its own
/// `EVP_MD_CTX`. `pkcs8PEM` and `publicKey` are computed once in `init`.
public final class ES256PrivateKey: @unchecked Sendable {
    private let key: PrivateKey
    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), like Apple's `.p8` files.
    public let pkcs8PEM: String
    /// The public half, for verifying this key's signatures.
    public let publicKey: ES256PublicKey

    private init(key: PrivateKey) throws {
        try key.withUnsafeKey { try P256KeyCheck.require($0, source: "the private key PEM") }
        self.key = key
        pkcs8PEM = String(decoding: try key.pemEncoded(), as: UTF8.self)
        publicKey = try ES256PublicKey(taking: ES256PublicKey.publicHalf(of: key))
    }

    /// Loads an unencrypted PKCS#8 (`BEGIN PRIVATE KEY`) or traditional (`BEGIN EC PRIVATE KEY`) PEM key.
    /// - Throws: `CryptoError.invalidPEM` when no unencrypted private key can be read;
    ///   `CryptoError.unsupportedKey` when it is not an EC P-256 key.
    public convenience init(pem: String) throws {
        try self.init(key: PrivateKey(pem: Array(pem.utf8), source: "the private key PEM"))
    }

    /// Generates a fresh random P-256 key.
    /// - Throws: `CryptoError.keyGeneration` when OpenSSL fails.
    public static func generate() throws -> ES256PrivateKey {
        try ES256PrivateKey(key: PrivateKey.generateP256())
    }

    /// Signs `message` (SHA-256, then ECDSA with a random nonce).
    /// - Returns: The signature in JWS raw form: 64 bytes, `r || s`, each big-endian and zero-padded.
    /// - Throws: `CryptoError.signing` when OpenSSL fails.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let raw = ECDSASignature.raw(fromDER: try signDER(message)) else {
            throw CryptoError.signing("OpenSSL produced a DER signature that does not convert to r || s")
        }
        return raw
    }

    /// Signs `message` like `sign(_:)`, returning the DER `ECDSA-Sig-Value` that
    /// `openssl dgst -sha256 -sign` writes (70–72 bytes, occasionally fewer).
    /// - Throws: `CryptoError.signing` when OpenSSL fails.
    public func signDER(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.signing("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard key.withUnsafeKey({ EVP_DigestSignInit(context, nil, FetchedDigest.sha256.pointer, nil, $0) }) == 1 else {
            throw CryptoError.signing("EVP_DigestSignInit failed")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1, length > 0 else {
            throw CryptoError.signing("EVP_DigestSign could not size the signature")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw CryptoError.signing("EVP_DigestSign failed")
        }
        signature.removeSubrange(length...)
        return signature
    }
}
