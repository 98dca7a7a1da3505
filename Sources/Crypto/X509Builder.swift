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
        /// An extension OpenSSL does not know, given by dotted OID and its DER-encoded value
        /// (the bytes that go inside the extension's OCTET STRING).
        case custom(oid: String, critical: Bool, der: [UInt8])

        /// The NID and configuration value of the extensions OpenSSL builds from text.
        fileprivate var nidAndValue: (nid: Int32, value: String)? {
            switch self {
            case .basicConstraints(let value): (NID_basic_constraints, value)
            case .keyUsage(let value): (NID_key_usage, value)
            case .extendedKeyUsage(let value): (NID_ext_key_usage, value)
            case .subjectKeyIdentifier(let value): (NID_subject_key_identifier, value)
            case .authorityKeyIdentifier(let value): (NID_authority_key_identifier, value)
            case .subjectAlternativeName(let value): (NID_subject_alt_name, value)
            case .custom: nil
            }
        }
    }

    /// One attribute of the subject name, by OpenSSL short name ("CN", "UID", "OU", "O", "C").
    struct NameAttribute {
        var field: String
        var value: String
    }

    /// The subject name's attributes, in order (the first is the outermost RDN).
    var subject: [NameAttribute]
    /// Days from now until `notAfter`.
    var validityDays: Int
    /// Seconds `notBefore` lies in the past.
    var backdate: Int = 3600
    /// Extensions, added in this order. Put `subjectKeyIdentifier` before
    /// `authorityKeyIdentifier`: on a self-signed certificate OpenSSL copies the AKI from it.
    var extensions: [Extension]

    /// A certificate whose subject is only `CN=commonName`.
    init(commonName: String, validityDays: Int, backdate: Int = 3600, extensions: [Extension]) {
        self.init(subject: [NameAttribute(field: "CN", value: commonName)], validityDays: validityDays,
                  backdate: backdate, extensions: extensions)
    }

    /// A certificate with the subject attributes `subject`, in order.
    init(subject: [NameAttribute], validityDays: Int, backdate: Int = 3600, extensions: [Extension]) {
        self.subject = subject
        self.validityDays = validityDays
        self.backdate = backdate
        self.extensions = extensions
    }

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

        guard let subject = X509_get_subject_name(x509) else {
            throw CryptoError.certificateIssuance("X509_get_subject_name failed")
        }
        for attribute in self.subject {
            let value = Array(attribute.value.utf8)
            // Country must be a PrintableString, so it goes through OpenSSL's string table. The
            // rest become UTF8String as they are: the table would cap CN at 64 characters (RFC
            // 5280's upper bound), which "Apple Push Services: <long bundle ID>" exceeds, as in
            // Apple's own certificates.
            let type = attribute.field == "C" ? MBSTRING_ASC : V_ASN1_UTF8STRING
            guard let length = Int32(exactly: value.count),
                  X509_NAME_add_entry_by_txt(subject, attribute.field, type, value, length, -1, 0) == 1
            else {
                throw CryptoError.certificateIssuance(
                    "could not set the subject \(attribute.field) \"\(attribute.value)\"")
            }
        }
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
            let made: OpaquePointer?
            if case .custom(let oid, let critical, let der) = ext {
                made = try Self.customExtension(oid: oid, critical: critical, der: der)
            } else if let configured = ext.nidAndValue {
                made = X509V3_EXT_conf_nid(nil, &context, configured.nid, configured.value)
            } else {
                made = nil
            }
            guard let created = made else {
                throw CryptoError.certificateIssuance("invalid extension \(ext)")
            }
            defer { X509_EXTENSION_free(created) }
            guard X509_add_ext(x509, created, -1) == 1 else {
                throw CryptoError.certificateIssuance("X509_add_ext failed for \(ext)")
            }
        }
    }

    /// An extension with object identifier `oid` (dotted form) whose OCTET STRING holds `der`.
    private static func customExtension(oid: String, critical: Bool, der: [UInt8]) throws -> OpaquePointer? {
        // no_name = 1: accept only the numeric form, never a short or long name.
        guard let object = OBJ_txt2obj(oid, 1) else {
            throw CryptoError.certificateIssuance("invalid object identifier \(oid)")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else {
            throw CryptoError.certificateIssuance("ASN1_OCTET_STRING_new failed")
        }
        defer { ASN1_OCTET_STRING_free(value) }
        guard let length = Int32(exactly: der.count), ASN1_OCTET_STRING_set(value, der, length) == 1 else {
            throw CryptoError.certificateIssuance("ASN1_OCTET_STRING_set failed for \(oid)")
        }
        // Copies both the object and the value.
        return X509_EXTENSION_create_by_OBJ(nil, object, critical ? 1 : 0, value)
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
