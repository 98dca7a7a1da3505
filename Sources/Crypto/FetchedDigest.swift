// APNs Sandbox — message digests fetched from OpenSSL's default provider once per process.
import CLibShims
import COpenSSL

/// An `EVP_MD` fetched once and kept for the life of the process.
///
/// Passing an already fetched `EVP_MD` to `EVP_DigestVerifyInit`, `EVP_Digest` or `HMAC` skips the
/// implicit per-call fetch, which costs 2–3× on short inputs (docs/swift-linux-notes.md).
///
/// `@unchecked Sendable` because a fetched algorithm is an immutable, reference-counted object
/// that OpenSSL lets any number of threads use at once ("Fetching algorithms" and "Performance"
/// in https://www.openssl.org/docs/man3.0/man7/crypto.html). The pointer is never freed, so it
/// outlives every use; the only mutation, the reference count, is atomic inside OpenSSL.
final class FetchedDigest: @unchecked Sendable {
    /// SHA-256, initialised on first use (Swift runs a static `let` initialiser exactly once).
    static let sha256 = FetchedDigest(name: "SHA256", fallback: EVP_sha256())

    /// The `EVP_MD`; valid forever, read-only.
    let pointer: OpaquePointer

    /// Fetches `name`; when that fails, uses `fallback`, OpenSSL's built-in constant
    /// (`EVP_sha256()` is never NULL; it fetches implicitly on each use, which is slower but correct).
    private init(name: String, fallback: OpaquePointer?) {
        guard let fetched = EVP_MD_fetch(nil, name, nil) ?? fallback else {
            // libcrypto always links SHA-256 in; without it nothing in this module can work.
            preconditionFailure("libcrypto offers no \(name) implementation")
        }
        ERR_clear_error()
        pointer = fetched
    }
}
