// APNs Sandbox — where the server's TLS material lives on disk.

/// File paths of the TLS material the server uses.
///
/// All three files are PEM. Give `caCertificate` to clients as their trust anchor; load
/// `certificateChain` and `privateKey` into the TLS server context.
public struct ServerTLSFiles: Sendable, Equatable {
    /// The local CA certificate (`ca.pem`), the file clients trust.
    public var caCertificate: String
    /// The server certificate followed by the CA certificate (`server.pem`).
    public var certificateChain: String
    /// The server's private key (`server-key.pem`, PKCS#8, mode 0600).
    public var privateKey: String

    /// Creates a value from explicit paths.
    public init(caCertificate: String, certificateChain: String, privateKey: String) {
        self.caCertificate = caCertificate
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}
