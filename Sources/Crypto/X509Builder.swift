// APNs Sandbox — builds and signs X.509 v3 certificates with OpenSSL.
import CLibShims
import COpenSSL

/// A description of one X.509 v3 certificate, turned into a signed `Certificate` by `issue`.
///
/// Serial numbers are 128 random bits; `notBefore` is backdated by `backdate` seconds to
/// tolerate clock skew between the server and its clients.
struct X509Builder {
    /// An X.509 v3 extension in OpenSSL's configuration syntax (as in `openssl.cnf`).
    enum Extension {
        case basicConstraints(String)
        case keyUsage(String)
        case extendedKeyUsage(String)
        case subjectKeyIdentifier(String)
        case authorityKeyIdentifier(String)
        case subjectAlternativeName(String)

        fileprivate var nidAndValue: (nid: Int32, value: String) {
            switch self {
            case .basicConstraints(let value): (NID_basic_constraints, value)
            case .keyUsage(let value): (NID_key_usage, value)
            case .extendedKeyUsage(let value): (NID_ext_key_usage, value)
            case .subjectKeyIdentifier(let value): (NID_subject_key_identifier, value)
            case .authorityKeyIdentifier(let value): (NID_authority_key_identifier, value)
            case .subjectAlternativeName(let value): (NID_subject_alt_name, value)
            }
        }
    }

    /// The subject's common name (CN), the only subject attribute set.
    var commonName: String
    /// Days from now until `notAfter`.
    var validityDays: Int
    /// Seconds `notBefore` lies in the past.
    var backdate: Int = 3600
    /// Extensions, added in this order. Put `subjectKeyIdentifier` before
    /// `authorityKeyIdentifier`: on a self-signed certificate OpenSSL copies the AKI from it.
    var extensions: [Extension]

    /// Builds the certificate for `subjectKey` and signs it with SHA-256.
    /// - Parameters:
    ///   - subjectKey: The key whose public half the certificate certifies.
    ///   - issuer: The issuing CA's certificate and key, or `nil` for a self-signed certificate.
    /// - Returns: The signed certificate.
    /// - Throws: `CryptoError.certificateIssuance` naming the step that failed.
    func issue(subjectKey: PrivateKey, issuer: (certificate: Certificate, key: PrivateKey)?) throws -> Certificate {
        guard let x509 = X509_new() else { throw CryptoError.certificateIssuance("X509_new failed") }
        defer { X509_free(x509) }

        guard X509_set_version(x509, 2) == 1 else { throw CryptoError.certificateIssuance("X509_set_version failed") }
        try Self.setRandomSerial(of: x509)
        guard X509_gmtime_adj(X509_getm_notBefore(x509), -backdate) != nil,
              let days = Int32(exactly: validityDays),
              X509_time_adj_ex(X509_getm_notAfter(x509), days, 0, nil) != nil
        else { throw CryptoError.certificateIssuance("could not set the validity period") }

        let cn = Array(commonName.utf8)
        guard let subject = X509_get_subject_name(x509),
              X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, cn, Int32(cn.count), -1, 0) == 1
        else { throw CryptoError.certificateIssuance("could not set the subject CN \"\(commonName)\"") }
        guard subjectKey.withUnsafeKey({ X509_set_pubkey(x509, $0) }) == 1 else {
            throw CryptoError.certificateIssuance("X509_set_pubkey failed")
        }

        let signingKey = issuer?.key ?? subjectKey
        if let issuerCertificate = issuer?.certificate {
            try issuerCertificate.withUnsafeCertificate { issuerX509 in
                guard X509_set_issuer_name(x509, X509_get_subject_name(issuerX509)) == 1 else {
                    throw CryptoError.certificateIssuance("X509_set_issuer_name failed")
                }
                try addExtensions(to: x509, issuer: issuerX509)
            }
        } else {
            guard X509_set_issuer_name(x509, subject) == 1 else {
                throw CryptoError.certificateIssuance("X509_set_issuer_name failed")
            }
            try addExtensions(to: x509, issuer: x509)
        }

        guard signingKey.withUnsafeKey({ X509_sign(x509, $0, EVP_sha256()) }) > 0 else {
            throw CryptoError.certificateIssuance("X509_sign failed")
        }
        return try Certificate(der: Self.derEncoding(of: x509))
    }

    private func addExtensions(to x509: OpaquePointer, issuer: OpaquePointer) throws {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer, x509, nil, nil, 0)
        for ext in extensions {
            let (nid, value) = ext.nidAndValue
            guard let created = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw CryptoError.certificateIssuance("invalid extension \(ext)")
            }
            defer { X509_EXTENSION_free(created) }
            guard X509_add_ext(x509, created, -1) == 1 else {
                throw CryptoError.certificateIssuance("X509_add_ext failed for \(ext)")
            }
        }
    }

    /// Sets a positive, non-zero 128-bit random serial number (RFC 5280 allows up to 20 octets).
    private static func setRandomSerial(of x509: OpaquePointer) throws {
        guard let number = BN_new() else { throw CryptoError.certificateIssuance("BN_new failed") }
        defer { BN_free(number) }
        repeat {
            guard BN_rand(number, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 else {
                throw CryptoError.certificateIssuance("BN_rand failed")
            }
        } while BN_is_zero(number) == 1
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(x509)) != nil else {
            throw CryptoError.certificateIssuance("BN_to_ASN1_INTEGER failed")
        }
    }

    private static func derEncoding(of x509: OpaquePointer) throws -> [UInt8] {
        let length = i2d_X509(x509, nil)
        guard length > 0 else { throw CryptoError.certificateIssuance("i2d_X509 failed") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        guard written == length else { throw CryptoError.certificateIssuance("i2d_X509 wrote a short encoding") }
        return bytes
    }
}
