// APNs Sandbox — an owned OpenSSL EVP_PKEY.
import CLibShims
import COpenSSL

/// An asymmetric private key (here always EC P-256) owned by this object and freed in `deinit`.
///
/// Not `Sendable`: use it on one thread, then drop it. Other files reach the underlying
/// `EVP_PKEY` only through `withUnsafeKey(_:)`, whose pointer must not escape the closure.
final class PrivateKey {
    private let key: OpaquePointer

    private init(taking key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Generates a fresh EC key on the NIST P-256 curve (prime256v1).
    /// - Throws: `CryptoError.keyGeneration` when OpenSSL fails.
    static func generateP256() throws -> PrivateKey {
        guard let key = CLibShims_EVP_EC_gen("P-256") else {
            throw CryptoError.keyGeneration("EVP_EC_gen(P-256) failed")
        }
        return PrivateKey(taking: key)
    }

    /// Parses the first private key in PEM `bytes` (PKCS#8 or traditional format, unencrypted).
    ///
    /// Blocks of other types before the key (such as `EC PARAMETERS` from `openssl ecparam
    /// -genkey`) are skipped. An encrypted key fails instead of prompting on the terminal.
    /// - Parameter source: Names the origin (usually a path) in error messages.
    /// - Throws: `CryptoError.invalidPEM` when no key can be read.
    convenience init(pem bytes: [UInt8], source: String) throws {
        guard !bytes.isEmpty else { throw CryptoError.invalidPEM("\(source) is empty") }
        let parsed = try MemoryBIO.reading(bytes) { bio in
            // A nil callback would make OpenSSL ask for a passphrase on /dev/tty.
            PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let parsed else { throw CryptoError.invalidPEM("\(source) holds no readable unencrypted private key") }
        self.init(taking: parsed)
    }

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    /// - Throws: `CryptoError.openSSL` when encoding fails.
    func pemEncoded() throws -> [UInt8] {
        try MemoryBIO.collecting("private key") { bio in
            PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1
        }
    }

    /// Lends the `EVP_PKEY` to `body`; the pointer is valid only during the call.
    func withUnsafeKey<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(key)
    }
}
