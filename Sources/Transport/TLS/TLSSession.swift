// APNs Sandbox — one TLS server session over OpenSSL memory BIOs.
import CLibShims
import COpenSSL

/// One connection's TLS state. The socket is never given to OpenSSL: ciphertext goes in
/// through `receive`, and what OpenSSL wants to send is collected with `drainCiphertext`.
///
/// Threading: confined to the owning connection's loop.
final class TLSSession {
    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    private(set) var isHandshakeComplete = false
    private(set) var alpn: String?
    private(set) var receivedCloseNotify = false
    /// The client's certificate (DER) and whether its chain verified against the client CAs.
    private(set) var peerCertificate: PeerCertificate?

    init(context: TLSContext) throws {
        guard let ssl = SSL_new(context.context) else { throw TLSError("SSL_new failed") }
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError("BIO_new failed")
        }
        // An empty read BIO means "want more", not EOF.
        _ = CLibShims_BIO_set_mem_eof_return(rbio, -1)
        _ = CLibShims_BIO_set_mem_eof_return(wbio, -1)
        SSL_set_bio(ssl, rbio, wbio)  // the SSL owns both BIOs from here on
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.readBIO = rbio
        self.writeBIO = wbio
    }

    deinit {
        SSL_free(ssl)
    }

    /// Feeds ciphertext from the socket and hands every decrypted chunk to `plaintext`.
    /// - Returns: true when this call completed the handshake.
    func receive(_ ciphertext: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
                 plaintext: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        var offset = 0
        while offset < ciphertext.count {
            // `!`: the loop runs only while offset < count, so the buffer is not empty.
            let written = BIO_write(readBIO, ciphertext.baseAddress! + offset, Int32(ciphertext.count - offset))
            guard written > 0 else { throw TLSError("BIO_write failed") }
            offset += Int(written)
        }
        var completedNow = false
        if !isHandshakeComplete {
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                isHandshakeComplete = true
                completedNow = true
                readALPN()
                readPeerCertificate()
            } else {
                let error = SSL_get_error(ssl, result)
                if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return false }
                throw TLSError("handshake failed")
            }
        }
        while true {
            let n = SSL_read(ssl, scratch.baseAddress, Int32(scratch.count))
            if n > 0 {
                try plaintext(UnsafeRawBufferPointer(start: scratch.baseAddress, count: Int(n)))
                continue
            }
            let error = SSL_get_error(ssl, n)
            switch error {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return completedNow
            case SSL_ERROR_ZERO_RETURN:
                receivedCloseNotify = true
                return completedNow
            default:
                throw TLSError("read failed")
            }
        }
    }

    /// Encrypts `plaintext`; the records become available through `drainCiphertext`.
    func encrypt(_ plaintext: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < plaintext.count {
            // `!`: the loop runs only while offset < count, so the buffer is not empty.
            let n = SSL_write(ssl, plaintext.baseAddress! + offset, Int32(min(plaintext.count - offset, 1 << 20)))
            guard n > 0 else { throw TLSError("write failed") }
            offset += Int(n)
        }
    }

    /// Sends a close_notify alert (its bytes then come out of `drainCiphertext`).
    func shutdown() {
        guard isHandshakeComplete else { return }
        _ = SSL_shutdown(ssl)
    }

    var hasPendingCiphertext: Bool { CLibShims_BIO_pending(writeBIO) > 0 }

    /// Moves everything OpenSSL wants to send into `buffer`.
    func drainCiphertext(into buffer: inout [UInt8]) {
        while true {
            let pending = Int(CLibShims_BIO_pending(writeBIO))
            if pending <= 0 { return }
            let start = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: pending))
            let n = buffer.withUnsafeMutableBytes { raw in
                // `!`: `pending` > 0 bytes were just appended, so the buffer is not empty.
                BIO_read(writeBIO, raw.baseAddress! + start, Int32(pending))
            }
            buffer.removeLast(pending - max(0, Int(n)))
            if n <= 0 { return }
        }
    }

    private func readPeerCertificate() {
        var der: UnsafeMutablePointer<UInt8>?
        let length = CLibShims_SSL_peer_certificate_der(ssl, &der)
        guard length > 0, let der else { return }
        defer { CRYPTO_free(der, #fileID, #line) }
        let result = SSL_get_verify_result(ssl)
        let verified = result == X509_V_OK
        peerCertificate = PeerCertificate(
            der: Array(UnsafeBufferPointer(start: der, count: Int(length))), isTrusted: verified,
            verificationFailure: verified ? nil : Self.verificationFailure(result))
    }

    /// OpenSSL's verification result in words (the client CAs are the sandbox CA's file).
    private static func verificationFailure(_ result: Int) -> String {
        switch Int32(truncatingIfNeeded: result) {
        case X509_V_ERR_CERT_HAS_EXPIRED: "client certificate expired"
        case X509_V_ERR_CERT_NOT_YET_VALID: "client certificate not yet valid"
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_SIGNATURE_FAILURE:
            "client certificate not issued by the sandbox CA"
        default:
            "client certificate does not verify: \(String(cString: X509_verify_cert_error_string(result)))"
        }
    }

    private func readALPN() {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        if let data, length > 0 {
            alpn = String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
        }
    }
}
