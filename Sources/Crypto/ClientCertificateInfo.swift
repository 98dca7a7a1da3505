// APNs Sandbox — what the server reads from an APNs client certificate.
import CLibShims
import COpenSSL
import Glibc

/// What the server reads from a client certificate presented in the TLS handshake.
///
/// Parsing does not verify anything: the TLS layer checks the chain against the CA first.
public struct ClientCertificateInfo: Sendable, Equatable {
    /// The subject UID (OID 0.9.2342.19200300.100.1.1), where Apple puts the bundle ID.
    public var bundleID: String?
    /// The subject CN ("Apple Push Services: <bundle ID>").
    public var commonName: String?
    /// The subject OU, where Apple puts the team ID.
    public var teamID: String?
    /// The topic strings of extension `1.2.840.113635.100.6.3.6`, in certificate order, without
    /// their type sequences; empty when the extension is absent.
    public var topics: [String]
    /// Whether extension `1.2.840.113635.100.6.3.1` (development / sandbox) is present.
    public var isDevelopment: Bool
    /// Whether extension `1.2.840.113635.100.6.3.2` (production) is present.
    public var isProduction: Bool
    /// Start of validity, seconds since the epoch.
    public var notBefore: Int64
    /// End of validity, seconds since the epoch.
    public var notAfter: Int64

    public init(bundleID: String?, commonName: String?, teamID: String? = nil, topics: [String],
                isDevelopment: Bool, isProduction: Bool, notBefore: Int64, notAfter: Int64) {
        self.bundleID = bundleID
        self.commonName = commonName
        self.teamID = teamID
        self.topics = topics
        self.isDevelopment = isDevelopment
        self.isProduction = isProduction
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Parses a DER certificate (as the TLS layer hands over the peer certificate).
    /// - Throws: `CryptoError.invalidCertificate` when the bytes are not a certificate or the
    ///   topic extension is malformed. Missing subject fields or extensions are not errors.
    public static func parse(der: [UInt8]) throws -> ClientCertificateInfo {
        let certificate: Certificate
        do {
            certificate = try Certificate(der: der)
        } catch {
            throw CryptoError.invalidCertificate("the \(der.count) bytes are not a DER certificate")
        }
        return try certificate.withUnsafeCertificate(info(of:))
    }

    /// Parses the first certificate of PEM text.
    /// - Throws: `CryptoError.invalidPEM` when there is no readable certificate;
    ///   `CryptoError.invalidCertificate` as `parse(der:)`.
    public static func parse(pem: String) throws -> ClientCertificateInfo {
        guard let first = try Certificate.parseAll(pem: Array(pem.utf8), source: "the certificate PEM").first else {
            throw CryptoError.invalidPEM("the certificate PEM holds no certificate")
        }
        return try first.withUnsafeCertificate(info(of:))
    }

    private static func info(of x509: OpaquePointer) throws -> ClientCertificateInfo {
        defer { ERR_clear_error() }
        let subject = X509_get_subject_name(x509)
        var info = ClientCertificateInfo(
            bundleID: subject.flatMap { text(of: NID_userId, in: $0) },
            commonName: subject.flatMap { text(of: NID_commonName, in: $0) },
            teamID: subject.flatMap { text(of: NID_organizationalUnitName, in: $0) },
            topics: [], isDevelopment: false, isProduction: false,
            notBefore: try epochSeconds(X509_get0_notBefore(x509), "notBefore"),
            notAfter: try epochSeconds(X509_get0_notAfter(x509), "notAfter")
        )
        for index in 0..<X509_get_ext_count(x509) {
            guard let ext = X509_get_ext(x509, index), let object = X509_EXTENSION_get_object(ext) else { continue }
            switch objectIdentifier(object) {
            case APNsCertificateOID.development:
                info.isDevelopment = true
            case APNsCertificateOID.production:
                info.isProduction = true
            case APNsCertificateOID.topics:
                guard let value = X509_EXTENSION_get_data(ext) else { continue }
                do {
                    info.topics = try APNsTopicList.decode(bytes(of: value)[...])
                } catch {
                    throw CryptoError.invalidCertificate("malformed topic extension: \(error)")
                }
            default:
                continue
            }
        }
        return info
    }

    /// The first `nid` attribute of `name` as UTF-8 (any ASN.1 string type), or `nil`.
    private static func text(of nid: Int32, in name: OpaquePointer) -> String? {
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
              let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { CLibShims_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// The dotted numeric form of `object` ("1.2.840.113635.100.6.3.6").
    private static func objectIdentifier(_ object: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        // no_name = 1: always the numeric form.
        let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard length > 0, Int(length) < buffer.count else { return "" }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let length = Int(ASN1_STRING_length(string))
        guard length > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    private static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?, _ field: String) throws -> Int64 {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            throw CryptoError.invalidCertificate("unreadable \(field) time")
        }
        return Int64(timegm(&parts))
    }
}
