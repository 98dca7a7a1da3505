// APNs Sandbox — the server's OpenSSL context (certificate, key, ALPN).
import CLibShims
import COpenSSL

/// Errors from the TLS layer, with OpenSSL's error queue text.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    public var message: String

    init(_ message: String) {
        var details: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            details.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.message = details.isEmpty ? message : message + ": " + details.joined(separator: "; ")
    }

    public var description: String { "TLS error: \(message)" }
}

/// A server TLS context: TLS 1.2+, one certificate chain and key, ALPN `h2` then `http/1.1`.
///
/// Clients that offer no ALPN still complete the handshake (no protocol is selected) and the
/// connection is sniffed for the HTTP/2 preface, as some APNs clients (aioapns) offer none.
///
/// Safety of `@unchecked Sendable`: the `SSL_CTX` is configured once in `init` and only used
/// afterwards to create `SSL` objects, which OpenSSL documents as thread-safe.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    /// Loads a PEM certificate chain (leaf first) and a PEM private key. With `clientCAFile`,
    /// clients are asked for a certificate issued by those CAs (optional: a client without one
    /// still connects; `Connection.peerCertificate` tells what was presented and whether it verified).
    public init(certificateChainFile: String, privateKeyFile: String, clientCAFile: String? = nil) throws {
        guard let method = TLS_server_method(), let ctx = SSL_CTX_new(method) else {
            throw TLSError("SSL_CTX_new failed")
        }
        self.context = ctx
        _ = CLibShims_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        _ = CLibShims_SSL_CTX_set_options(ctx, CLibShims_SSL_OP_NO_RENEGOTIATION() | CLibShims_SSL_OP_NO_COMPRESSION())
        _ = CLibShims_SSL_CTX_set_mode(
            ctx, CLibShims_SSL_MODE_RELEASE_BUFFERS() | CLibShims_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER()
                | CLibShims_SSL_MODE_ENABLE_PARTIAL_WRITE())
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateChainFile) == 1 else {
            throw TLSError("cannot load certificate chain \(certificateChainFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError("cannot load private key \(privateKeyFile)")
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSError("private key does not match the certificate")
        }
        CLibShims_SSL_CTX_use_default_alpn(ctx)
        if let clientCAFile {
            guard CLibShims_SSL_CTX_request_client_certificate(ctx, clientCAFile) == 1 else {
                throw TLSError("cannot load client CA \(clientCAFile)")
            }
        }
    }

    deinit {
        SSL_CTX_free(context)
    }
}
