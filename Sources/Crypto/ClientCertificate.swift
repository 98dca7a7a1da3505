// APNs Sandbox — APNs-style TLS client certificates ("Apple Push Notification service SSL").
import CLibShims
import COpenSSL

/// Which APNs environments a client certificate is good for.
public enum CertificateEnvironment: String, Sendable, Codable {
    /// Sandbox only (extension `1.2.840.113635.100.6.3.1`).
    case development
    /// Production only (extension `1.2.840.113635.100.6.3.2`).
    case production
    /// Both, like Apple's current "Sandbox & Production" certificates (both extensions).
    case both
}

/// What to put into a client certificate issued by `CertificateAuthority.issueClientCertificate`.
public struct ClientCertificateRequest: Sendable {
    /// The App ID's bundle identifier; goes into the subject UID and CN.
    public var bundleID: String
    /// The topic list (`1.2.840.113635.100.6.3.6`). `nil` means Apple's usual three:
    /// `bundleID`, `bundleID.voip`, `bundleID.complication`. An empty list leaves the extension
    /// out, like a legacy single-topic certificate (the server then uses the subject UID).
    public var topics: [String]?
    /// Which environment extensions the certificate carries.
    public var environment: CertificateEnvironment
    /// Days from now until `notAfter` (Apple issues them for about 13 months).
    public var validityDays: Int
    /// The subject OU, where Apple puts the 10-character team ID.
    public var teamID: String

    /// A request with Apple's defaults: the usual three topics, both environments, one year.
    public init(bundleID: String, topics: [String]? = nil, environment: CertificateEnvironment = .both,
                validityDays: Int = 365, teamID: String = "SANDBOX000") {
        self.bundleID = bundleID
        self.topics = topics
        self.environment = environment
        self.validityDays = validityDays
        self.teamID = teamID
    }

    /// The topics written into the certificate: `topics`, or the default three.
    public var effectiveTopics: [String] {
        topics ?? [bundleID, bundleID + ".voip", bundleID + ".complication"]
    }
}

/// A client certificate and its private key, both PEM.
public struct IssuedClientCertificate: Sendable {
    /// The certificate alone (`-----BEGIN CERTIFICATE-----`), signed by the sandbox CA.
    public var certificatePEM: String
    /// The matching EC P-256 private key as unencrypted PKCS#8 (`-----BEGIN PRIVATE KEY-----`).
    public var privateKeyPEM: String

    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Object identifiers of Apple's APNs certificate extensions.
enum APNsCertificateOID {
    static let development = "1.2.840.113635.100.6.3.1"
    static let production = "1.2.840.113635.100.6.3.2"
    static let topics = "1.2.840.113635.100.6.3.6"
}

extension CertificateAuthority {
    /// Issues a client certificate like Apple's "Apple Push Notification service SSL (Sandbox &
    /// Production)", signed by the sandbox CA in `directory`.
    ///
    /// The certificate has:
    /// - subject `UID=<bundleID>, CN=Apple Push Services: <bundleID>, OU=<teamID>, O=APNs Sandbox, C=US`;
    /// - `keyUsage` critical digitalSignature, `extendedKeyUsage` clientAuth, `basicConstraints`
    ///   critical CA:FALSE, subject and authority key identifiers;
    /// - `1.2.840.113635.100.6.3.1` (development) and/or `…6.3.2` (production), each a DER NULL,
    ///   as `request.environment` says;
    /// - `…6.3.6`, the topic list in Apple's encoding: SEQUENCE { UTF8String topic, SEQUENCE {
    ///   UTF8String type }, … } with type `voip` for `*.voip`, `complication` for
    ///   `*.complication`, else `app`.
    ///
    /// Nothing is written except the CA itself: when `ca.pem` is missing, this first runs
    /// `ensureServerCertificate(in:)`. Blocking file I/O, like the rest of `CertificateAuthority`.
    /// - Parameters:
    ///   - directory: The TLS directory holding `ca.pem` and `ca-key.pem`.
    ///   - request: Bundle ID, topics, environment, validity.
    /// - Returns: The certificate and its new private key, PEM.
    /// - Throws: `CryptoError.invalidRequest` for an unusable bundle ID, topic or validity;
    ///   otherwise as `ensureServerCertificate(in:)` (missing CA key, OpenSSL or file failures).
    public static func issueClientCertificate(in directory: String, request: ClientCertificateRequest) throws
        -> IssuedClientCertificate
    {
        try validate(request)
        let authority = try loadAuthorityForIssuing(in: directory)
        var extensions: [X509Builder.Extension] = [
            .basicConstraints("critical,CA:FALSE"),
            .keyUsage("critical,digitalSignature"),
            .extendedKeyUsage("clientAuth"),
            .subjectKeyIdentifier("hash"),
            .authorityKeyIdentifier("keyid:always"),
        ]
        var null = DERWriter()
        null.appendNull()
        if request.environment != .production {
            extensions.append(.custom(oid: APNsCertificateOID.development, critical: false, der: null.bytes))
        }
        if request.environment != .development {
            extensions.append(.custom(oid: APNsCertificateOID.production, critical: false, der: null.bytes))
        }
        let topics = request.effectiveTopics
        if !topics.isEmpty {
            extensions.append(.custom(oid: APNsCertificateOID.topics, critical: false,
                                      der: APNsTopicList.encode(topics, bundleID: request.bundleID)))
        }
        let builder = X509Builder(
            subject: [
                .init(field: "UID", value: request.bundleID),
                .init(field: "CN", value: "Apple Push Services: \(request.bundleID)"),
                .init(field: "OU", value: request.teamID),
                .init(field: "O", value: "APNs Sandbox"),
                .init(field: "C", value: "US"),
            ],
            validityDays: request.validityDays,
            extensions: extensions
        )
        let key = try PrivateKey.generateP256()
        let certificate = try builder.issue(subjectKey: key, issuer: authority)
        return IssuedClientCertificate(
            certificatePEM: String(decoding: try certificate.pemEncoded(), as: UTF8.self),
            privateKeyPEM: String(decoding: try key.pemEncoded(), as: UTF8.self)
        )
    }

    /// Bundle IDs and topics: 1–255 characters of `A–Z a–z 0–9 . -` (Apple's App ID alphabet);
    /// team ID: 1–64 printable ASCII characters; validity: 1 to 36 500 days.
    private static func validate(_ request: ClientCertificateRequest) throws {
        func isIdentifier(_ text: String) -> Bool {
            (1...255).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            }
        }
        guard isIdentifier(request.bundleID) else {
            throw CryptoError.invalidRequest(
                "bundle ID \"\(request.bundleID)\" must be 1–255 characters of A–Z a–z 0–9 . -")
        }
        for topic in request.effectiveTopics where !isIdentifier(topic) {
            throw CryptoError.invalidRequest("topic \"\(topic)\" must be 1–255 characters of A–Z a–z 0–9 . -")
        }
        guard (1...64).contains(request.teamID.utf8.count),
              request.teamID.utf8.allSatisfy({ (0x20..<0x7F).contains($0) })
        else {
            throw CryptoError.invalidRequest("team ID \"\(request.teamID)\" must be 1–64 printable ASCII characters")
        }
        guard (1...36_500).contains(request.validityDays) else {
            throw CryptoError.invalidRequest("validity of \(request.validityDays) days is outside 1...36500")
        }
    }
}

/// Apple's encoding of the topic list extension (`1.2.840.113635.100.6.3.6`):
/// `SEQUENCE { UTF8String topic, SEQUENCE { UTF8String type }, … }`.
enum APNsTopicList {
    /// The extension value for `topics`; each topic is followed by its type sequence.
    static func encode(_ topics: [String], bundleID: String) -> [UInt8] {
        var writer = DERWriter()
        writer.appendSequence { list in
            for topic in topics {
                list.appendUTF8String(topic)
                list.appendSequence { $0.appendUTF8String(topicType(of: topic, bundleID: bundleID)) }
            }
        }
        return writer.bytes
    }

    /// The topic strings of an extension value: the UTF8String elements directly inside the
    /// outer SEQUENCE, in order. Other elements (the type sequences) are skipped.
    /// - Throws: `MalformedDER` when the value is not one well-formed SEQUENCE or a topic is not UTF-8.
    static func decode(_ der: ArraySlice<UInt8>) throws -> [String] {
        var outer = DERReader(der)
        let list = try outer.readElement()
        guard list.tag == DERTag.sequence else { throw MalformedDER(description: "topic list is not a SEQUENCE") }
        guard outer.isAtEnd else { throw MalformedDER(description: "bytes after the topic list") }
        var reader = DERReader(list.content)
        var topics: [String] = []
        while !reader.isAtEnd {
            let element = try reader.readElement()
            guard element.tag == DERTag.utf8String else { continue }
            guard let topic = String(validating: element.content, as: UTF8.self) else {
                throw MalformedDER(description: "topic is not valid UTF-8")
            }
            topics.append(topic)
        }
        return topics
    }

    /// The type Apple pairs with `topic`.
    static func topicType(of topic: String, bundleID: String) -> String {
        if topic == bundleID { return "app" }
        if topic.hasSuffix(".voip") { return "voip" }
        if topic.hasSuffix(".complication") { return "complication" }
        return "app"
    }
}
