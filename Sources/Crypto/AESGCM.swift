// APNs Sandbox — AES-256-GCM for the service extension's `decrypt` step (docs/extension-protocol.md, builtin steps).
import CLibShims
import COpenSSL

/// AES-256-GCM (NIST SP 800-38D) with a 96-bit nonce and a 128-bit tag, in the layout push senders use:
/// `nonce (12 bytes) | ciphertext | tag (16 bytes)` ("combined", as CryptoKit's `AES.GCM.SealedBox.combined`).
///
/// The cipher is fetched from OpenSSL's default provider once per process (an implicit fetch in every
/// `EVP_*Init` costs 2–3×, docs/swift-linux-notes.md); each call uses its own `EVP_CIPHER_CTX`, so every
/// function is safe from any thread. No additional authenticated data is used.
public enum AESGCM {
    /// Key length in bytes (AES-256).
    public static let keyLength = 32
    /// Nonce length in bytes (96 bits, the length GCM is defined for without GHASH of the IV).
    public static let nonceLength = 12
    /// Tag length in bytes (128 bits).
    public static let tagLength = 16

    /// Decrypts and authenticates `combined` (`nonce | ciphertext | tag`) under `key`.
    /// - Returns: The plaintext.
    /// - Throws: ``AESGCMError`` when the key is not 32 bytes, `combined` is shorter than nonce plus tag,
    ///   or authentication fails (wrong key, tampered nonce, ciphertext or tag).
    public static func open(combined: [UInt8], key: [UInt8]) throws -> [UInt8] {
        guard key.count == keyLength else { throw AESGCMError(.invalidKeyLength, "key is \(key.count) bytes, not 32") }
        guard combined.count >= nonceLength + tagLength else {
            throw AESGCMError(.inputTooShort, "\(combined.count) bytes cannot hold a 12-byte nonce and a 16-byte tag")
        }
        let nonce = Array(combined[0..<nonceLength])
        let ciphertext = Array(combined[nonceLength..<(combined.count - tagLength)])
        var tag = Array(combined[(combined.count - tagLength)...])
        return try withContext { context in
            guard EVP_DecryptInit_ex2(context, FetchedCipher.aes256GCM.pointer, key, nonce, nil) == 1 else {
                throw AESGCMError(.openSSL, "EVP_DecryptInit_ex2: \(CryptoError.drainOpenSSLErrorQueue())")
            }
            var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
            var written: Int32 = 0
            if !ciphertext.isEmpty {
                guard let length = Int32(exactly: ciphertext.count),
                    EVP_DecryptUpdate(context, &plaintext, &written, ciphertext, length) == 1
                else {
                    throw AESGCMError(.openSSL, "EVP_DecryptUpdate: \(CryptoError.drainOpenSSLErrorQueue())")
                }
            }
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
                throw AESGCMError(.openSSL, "setting the tag: \(CryptoError.drainOpenSSLErrorQueue())")
            }
            var final: Int32 = 0
            let verified = plaintext.withUnsafeMutableBufferPointer { buffer in
                EVP_DecryptFinal_ex(context, buffer.baseAddress.map { $0 + Int(written) }, &final)
            }
            guard verified == 1 else {
                // A failed tag check leaves nothing useful on OpenSSL's queue; clear it for the next caller.
                ERR_clear_error()
                throw AESGCMError(.authenticationFailed, "the tag does not match (wrong key or altered data)")
            }
            return Array(plaintext.prefix(Int(written + final)))
        }
    }

    /// Encrypts `plaintext` under `key`.
    /// - Parameters:
    ///   - plaintext: Any bytes, including none.
    ///   - key: 32 bytes.
    ///   - nonce: 12 bytes; nil draws a random one (`RAND_bytes`). Never reuse a nonce with the same key.
    /// - Returns: `nonce | ciphertext | tag`.
    /// - Throws: ``AESGCMError`` for a key or nonce of the wrong length, or an OpenSSL failure.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]? = nil) throws -> [UInt8] {
        guard key.count == keyLength else { throw AESGCMError(.invalidKeyLength, "key is \(key.count) bytes, not 32") }
        var iv = nonce ?? [UInt8](repeating: 0, count: nonceLength)
        guard iv.count == nonceLength else {
            throw AESGCMError(.invalidNonceLength, "nonce is \(iv.count) bytes, not 12")
        }
        if nonce == nil {
            guard RAND_bytes(&iv, Int32(nonceLength)) == 1 else {
                throw AESGCMError(.openSSL, "RAND_bytes: \(CryptoError.drainOpenSSLErrorQueue())")
            }
        }
        return try withContext { context in
            guard EVP_EncryptInit_ex2(context, FetchedCipher.aes256GCM.pointer, key, iv, nil) == 1 else {
                throw AESGCMError(.openSSL, "EVP_EncryptInit_ex2: \(CryptoError.drainOpenSSLErrorQueue())")
            }
            var output = iv + [UInt8](repeating: 0, count: plaintext.count + 16 + tagLength)
            var written: Int32 = 0
            if !plaintext.isEmpty {
                guard let length = Int32(exactly: plaintext.count) else {
                    throw AESGCMError(.inputTooLong, "plaintext of \(plaintext.count) bytes")
                }
                let status = output.withUnsafeMutableBufferPointer { buffer in
                    EVP_EncryptUpdate(context, buffer.baseAddress.map { $0 + nonceLength }, &written, plaintext, length)
                }
                guard status == 1 else {
                    throw AESGCMError(.openSSL, "EVP_EncryptUpdate: \(CryptoError.drainOpenSSLErrorQueue())")
                }
            }
            var final: Int32 = 0
            let finished = output.withUnsafeMutableBufferPointer { buffer in
                EVP_EncryptFinal_ex(context, buffer.baseAddress.map { $0 + nonceLength + Int(written) }, &final)
            }
            guard finished == 1 else {
                throw AESGCMError(.openSSL, "EVP_EncryptFinal_ex: \(CryptoError.drainOpenSSLErrorQueue())")
            }
            let tagStart = nonceLength + Int(written + final)
            let tagged = output.withUnsafeMutableBufferPointer { buffer in
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength),
                                    buffer.baseAddress.map { UnsafeMutableRawPointer($0 + tagStart) })
            }
            guard tagged == 1 else {
                throw AESGCMError(.openSSL, "reading the tag: \(CryptoError.drainOpenSSLErrorQueue())")
            }
            return Array(output.prefix(tagStart + tagLength))
        }
    }

    /// Runs `body` with a fresh cipher context, freed afterwards.
    private static func withContext<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        guard let context = EVP_CIPHER_CTX_new() else {
            throw AESGCMError(.openSSL, "EVP_CIPHER_CTX_new: \(CryptoError.drainOpenSSLErrorQueue())")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        return try body(context)
    }
}

/// Why an ``AESGCM`` operation failed.
public struct AESGCMError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        case invalidKeyLength = "invalid key length"
        case invalidNonceLength = "invalid nonce length"
        case inputTooShort = "input too short"
        case inputTooLong = "input too long"
        /// The tag did not verify: wrong key, or the nonce, ciphertext or tag was altered.
        case authenticationFailed = "authentication failed"
        case openSSL = "OpenSSL call failed"
    }

    public let reason: Reason
    public let message: String

    init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "AES-GCM: \(reason.rawValue): \(message)" }
}

/// The AES-256-GCM `EVP_CIPHER`, fetched once and kept for the life of the process.
///
/// `@unchecked Sendable` for the reason ``FetchedDigest`` gives: a fetched algorithm is immutable and may be
/// used by any number of threads at once; the pointer is never freed.
private final class FetchedCipher: @unchecked Sendable {
    static let aes256GCM = FetchedCipher(name: "AES-256-GCM", fallback: EVP_aes_256_gcm())

    let pointer: OpaquePointer

    private init(name: String, fallback: OpaquePointer?) {
        guard let fetched = EVP_CIPHER_fetch(nil, name, nil) ?? fallback else {
            preconditionFailure("libcrypto offers no \(name) implementation")
        }
        ERR_clear_error()
        pointer = fetched
    }
}
