// APNs Sandbox — what a TLS client presented.

/// A client certificate from the TLS handshake.
public struct PeerCertificate: Sendable, Equatable {
    /// The leaf certificate, DER encoded.
    public var der: [UInt8]
    /// True when the chain verified against the configured client CAs (and is within its validity).
    public var isTrusted: Bool

    public init(der: [UInt8], isTrusted: Bool) {
        self.der = der
        self.isTrusted = isTrusted
    }
}
