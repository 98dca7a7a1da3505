// APNs Sandbox — HMAC-SHA256 and SHA-256 (webhook signatures, fingerprints).
import CLibShims
import COpenSSL

/// HMAC with SHA-256 (RFC 2104, FIPS 198-1).
public enum HMACSHA256 {
    /// The 32-byte HMAC-SHA256 of `message` under `key` (any key length; long keys are hashed
    /// first, as RFC 2104 says).
    ///
    /// Uses OpenSSL's one-shot `HMAC()`, which is not deprecated in 3.0 (only `HMAC_CTX` is),
    /// with the SHA-256 `EVP_MD` fetched once per process. Safe to call from any thread.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard let keyLength = Int32(exactly: key.count),
              HMAC(FetchedDigest.sha256.pointer, key, keyLength, message, message.count, &code, &length) != nil,
              length == 32
        else {
            // HMAC() fails only when it cannot allocate its context (or for a key over 2 GiB),
            // which, like any allocation failure in Swift, is not recoverable.
            preconditionFailure("HMAC-SHA256 failed: \(CryptoError.drainOpenSSLErrorQueue())")
        }
        return code
    }
}

/// SHA-256 (FIPS 180-4).
public enum SHA256Digest {
    /// The 32-byte SHA-256 digest of `bytes`. Safe to call from any thread.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &digest, &length, FetchedDigest.sha256.pointer, nil) == 1,
              length == 32
        else {
            // EVP_Digest fails only when it cannot allocate its context: not recoverable.
            preconditionFailure("SHA-256 failed: \(CryptoError.drainOpenSSLErrorQueue())")
        }
        return digest
    }
}

/// Cryptographically secure random bytes (OpenSSL's `RAND_bytes`), for secrets and identifiers.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        guard let length = Int32(exactly: count), RAND_bytes(&bytes, length) == 1 else {
            // RAND_bytes fails only when the system entropy source is unusable: nothing safe can follow.
            preconditionFailure("RAND_bytes failed: \(CryptoError.drainOpenSSLErrorQueue())")
        }
        return bytes
    }
}

/// Comparison of secrets in time independent of where they differ (OpenSSL's `CRYPTO_memcmp`).
public enum ConstantTime {
    /// Whether `a` equals `b`. Both are hashed with SHA-256 first, so neither their contents nor their
    /// lengths show in the time taken (a length check first would tell an attacker the secret's length).
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let left = SHA256Digest.hash(a)
        let right = SHA256Digest.hash(b)
        return CRYPTO_memcmp(left, right, left.count) == 0
    }
}
