// APNs Sandbox — an owned OpenSSL X509 certificate.
import CLibShims
import COpenSSL
import Foundation

/// An X.509 certificate owned by this object and freed in `deinit`.
///
/// Not `Sendable`: use it on one thread, then drop it. Other files reach the underlying `X509`
/// only through `withUnsafeCertificate(_:)`, whose pointer must not escape the closure.
final class Certificate {
    private let x509: OpaquePointer

    private init(taking x509: OpaquePointer) {
        self.x509 = x509
    }

    deinit {
        X509_free(x509)
    }

    /// Parses a DER-encoded certificate.
    /// - Throws: `CryptoError.invalidPEM` when the bytes are not one certificate.
    convenience init(der bytes: [UInt8]) throws {
        let parsed: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptoError.invalidPEM("DER data holds no certificate") }
        self.init(taking: parsed)
    }

    /// Parses every certificate in PEM `bytes`, in file order.
    ///
    /// Each `BEGIN CERTIFICATE` block must parse, so a truncated chain is an error rather than a
    /// silently shorter list.
    /// - Parameter source: Names the origin (usually a path) in error messages.
    /// - Throws: `CryptoError.invalidPEM` when there is no certificate or a block is damaged.
    static func parseAll(pem bytes: [UInt8], source: String) throws -> [Certificate] {
        guard !bytes.isEmpty else { throw CryptoError.invalidPEM("\(source) is empty") }
        let text = String(decoding: bytes, as: UTF8.self)
        let blocks = text.occurrences(of: "-----BEGIN CERTIFICATE-----")
            + text.occurrences(of: "-----BEGIN X509 CERTIFICATE-----")
        let certificates = try MemoryBIO.reading(bytes) { bio in
            var parsed: [Certificate] = []
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                parsed.append(Certificate(taking: x509))
            }
            return parsed
        }
        guard !certificates.isEmpty, certificates.count == blocks else {
            throw CryptoError.invalidPEM(
                "\(source) is not a valid PEM certificate file (\(blocks) certificate block(s), "
                    + "\(certificates.count) readable)")
        }
        // Reading past the last block always leaves PEM_R_NO_START_LINE queued.
        ERR_clear_error()
        return certificates
    }

    /// The certificate in DER form.
    /// - Throws: `CryptoError.openSSL` when encoding fails.
    func derEncoded() throws -> [UInt8] {
        let length = i2d_X509(x509, nil)
        guard length > 0 else { throw CryptoError.openSSL("i2d_X509 failed") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        guard written == length else { throw CryptoError.openSSL("i2d_X509 wrote \(written) of \(length) bytes") }
        return bytes
    }

    /// The certificate as a `-----BEGIN CERTIFICATE-----` block.
    /// - Throws: `CryptoError.openSSL` when encoding fails.
    func pemEncoded() throws -> [UInt8] {
        try MemoryBIO.collecting("certificate") { bio in PEM_write_bio_X509(bio, x509) == 1 }
    }

    /// The DNS names and IP addresses of the subjectAltName extension, in certificate order
    /// (empty when there is no such extension or it holds only other kinds of names).
    func subjectAlternativeNames() -> [SubjectAlternativeName] {
        guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else {
            ERR_clear_error()
            return []
        }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var result: [SubjectAlternativeName] = []
        for index in 0..<CLibShims_sk_GENERAL_NAME_num(names) {
            guard let name = CLibShims_sk_GENERAL_NAME_value(names, index) else { continue }
            var type: Int32 = 0
            guard let value = GENERAL_NAME_get0_value(name, &type) else { continue }
            let string = value.assumingMemoryBound(to: ASN1_STRING.self)
            let length = Int(ASN1_STRING_length(string))
            guard length > 0, let data = ASN1_STRING_get0_data(string) else { continue }
            let bytes = Array(UnsafeBufferPointer(start: data, count: length))
            switch type {
            case GEN_DNS:
                result.append(.dns(String(decoding: bytes, as: UTF8.self).lowercased()))
            case GEN_IPADD where length == 4 || length == 16:
                result.append(.ipAddress(bytes))
            default:
                continue
            }
        }
        return result
    }

    /// Whether the certificate is still valid `seconds` from now (false once `notAfter` is closer).
    func isValid(forAtLeast seconds: Int) -> Bool {
        var days: Int32 = 0
        var remainder: Int32 = 0
        // A nil `from` time means "now".
        guard ASN1_TIME_diff(&days, &remainder, nil, X509_get0_notAfter(x509)) == 1 else {
            ERR_clear_error()
            return false
        }
        return Int(days) * 86_400 + Int(remainder) > seconds
    }

    /// Whether `issuer`'s public key verifies this certificate's signature and names match.
    func isIssued(by issuer: Certificate) -> Bool {
        defer { ERR_clear_error() }
        guard X509_check_issued(issuer.x509, x509) == X509_V_OK,
              let issuerKey = X509_get0_pubkey(issuer.x509)
        else { return false }
        return X509_verify(x509, issuerKey) == 1
    }

    /// Whether `key` is the private half of this certificate's public key.
    func matches(_ key: PrivateKey) -> Bool {
        defer { ERR_clear_error() }
        return key.withUnsafeKey { X509_check_private_key(x509, $0) == 1 }
    }

    /// Lends the `X509` to `body`; the pointer is valid only during the call.
    func withUnsafeCertificate<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(x509)
    }
}

extension String {
    /// How many non-overlapping times `marker` occurs.
    fileprivate func occurrences(of marker: String) -> Int {
        var count = 0
        var searchRange = startIndex..<endIndex
        while let found = range(of: marker, range: searchRange) {
            count += 1
            searchRange = found.upperBound..<endIndex
        }
        return count
    }
}
