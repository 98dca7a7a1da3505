// APNs Sandbox — what a TLS client presented.

/// A client certificate from the TLS handshake.
public struct PeerCertificate: Sendable, Equatable {
    /// The leaf certificate, DER encoded.
    public var der: [UInt8]
    /// True when the chain verified against the configured client CAs (and is within its validity).
    public var isTrusted: Bool
    /// Why the chain did not verify, for people (`client certificate expired`, `… not issued by the sandbox
    /// CA`); nil when it verified.
    public var verificationFailure: String?

    public init(der: [UInt8], isTrusted: Bool, verificationFailure: String? = nil) {
        self.der = der
        self.isTrusted = isTrusted
        self.verificationFailure = isTrusted ? nil : verificationFailure
    }
}
