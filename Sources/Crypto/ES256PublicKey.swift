// APNs Sandbox — verification of ES256 (ECDSA P-256 + SHA-256) signatures.
import CLibShims
import COpenSSL

/// A P-256 public key that verifies ES256 signatures, such as those of APNs provider tokens.
///
/// Thread-safe: `verify` may run concurrently on many threads. Each call creates its own
/// `EVP_MD_CTX`; the `EVP_PKEY` is only read after `init`; the SHA-256 `EVP_MD` is fetched once
/// per process (`FetchedDigest`).
///
/// `@unchecked Sendable` because the only stored C object, the `EVP_PKEY`, is never mutated after
/// `init` and OpenSSL 3 allows concurrent signature operations on one key as long as nobody
/// modifies it (its internal provider-key cache is guarded by the key's own lock). It is freed in
/// `deinit`, which runs only when no thread holds the object.
///
/// Parsing a PEM key costs about half a millisecond: parse once, keep the object.
public final class ES256PublicKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// The key as SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    public let pem: String

    /// Takes ownership of `key`, a public (or key-pair) P-256 `EVP_PKEY` already checked with
    /// `P256KeyCheck`; frees it when `init` throws.
    init(taking key: OpaquePointer) throws {
        do {
            pem = String(decoding: try MemoryBIO.collecting("public key") { PEM_write_bio_PUBKEY($0, key) == 1 },
                         as: UTF8.self)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Loads a key from PEM text.
    /// - Parameter pem: One of: a PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`, Apple's
    ///   `.p8` format), a traditional EC private key (`-----BEGIN EC PRIVATE KEY-----`, optionally
    ///   after an `EC PARAMETERS` block), or a SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
    ///   Of a private key only the public half is kept.
    /// - Throws: `CryptoError.invalidPEM` when no unencrypted key can be read;
    ///   `CryptoError.unsupportedKey` when the key is not EC P-256 (RSA, Ed25519, P-384, …).
    public convenience init(pem: String) throws {
        let bytes = Array(pem.utf8)
        if pem.contains("-----BEGIN PUBLIC KEY-----") {
            let parsed = try MemoryBIO.reading(bytes) { bio in
                PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil)
            }
            guard let parsed else { throw CryptoError.invalidPEM("the public key PEM holds no readable key") }
            do {
                try P256KeyCheck.require(parsed, source: "the public key PEM")
            } catch {
                EVP_PKEY_free(parsed)
                throw error
            }
            try self.init(taking: parsed)
        } else {
            let privateKey = try PrivateKey(pem: bytes, source: "the private key PEM")
            try privateKey.withUnsafeKey { try P256KeyCheck.require($0, source: "the private key PEM") }
            try self.init(taking: Self.publicHalf(of: privateKey))
        }
    }

    /// Verifies an ES256 signature over `message`.
    /// - Parameters:
    ///   - signature: Either JWS raw form (64 bytes, `r || s`) or a DER `ECDSA-Sig-Value`
    ///     (as `openssl dgst -sign` makes; APNs accepts both).
    ///   - message: The signed bytes (for a JWT, the ASCII of `header.claims`).
    /// - Returns: `true` only for a valid signature; `false` for anything else, including
    ///   malformed signatures of any length. Never throws or traps on client-controlled input.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        if signature.count == ECDSASignature.rawLength, let der = ECDSASignature.der(fromRaw: signature),
           verify(der: der, message: message) {
            return true
        }
        // A DER P-256 signature is a SEQUENCE of 8...72 bytes. A 64-byte input that failed as raw
        // may still be DER (r and s short enough), so it gets a second chance here.
        guard signature.first == 0x30, (8...72).contains(signature.count) else { return false }
        return verify(der: signature, message: message)
    }

    private func verify(der: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            ERR_clear_error()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, FetchedDigest.sha256.pointer, nil, key) == 1,
              EVP_DigestVerify(context, der, der.count, message, message.count) == 1
        else {
            // Bad signatures queue errors on this thread; they must not surface in a later call.
            ERR_clear_error()
            return false
        }
        return true
    }

    /// A new public-only `EVP_PKEY` holding the public half of `privateKey` (a DER round trip
    /// through SubjectPublicKeyInfo, so the private scalar is not kept in memory twice).
    /// - Throws: `CryptoError.openSSL` when encoding or decoding fails.
    static func publicHalf(of privateKey: PrivateKey) throws -> OpaquePointer {
        try privateKey.withUnsafeKey { key in
            let length = i2d_PUBKEY(key, nil)
            guard length > 0 else { throw CryptoError.openSSL("i2d_PUBKEY failed") }
            var der = [UInt8](repeating: 0, count: Int(length))
            let written = der.withUnsafeMutableBufferPointer { buffer in
                var cursor = buffer.baseAddress
                return i2d_PUBKEY(key, &cursor)
            }
            guard written == length else { throw CryptoError.openSSL("i2d_PUBKEY wrote \(written) of \(length) bytes") }
            let parsed = der.withUnsafeBufferPointer { buffer in
                var cursor = buffer.baseAddress
                return d2i_PUBKEY(nil, &cursor, buffer.count)
            }
            guard let parsed else { throw CryptoError.openSSL("d2i_PUBKEY failed") }
            return parsed
        }
    }
}
