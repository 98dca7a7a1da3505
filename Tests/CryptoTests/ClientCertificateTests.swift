// APNs Sandbox — tests for APNs-style client certificates: issuing, Apple's extensions, parsing.
import Foundation
import Testing

@testable import Crypto

@Suite struct ClientCertificateTests {
    /// A `.both` certificate verifies for TLS client use with the openssl CLI and parses back
    /// with bundle ID, three topics and both environment flags.
    @Test func issuesVerifiableUniversalCertificate() throws {
        try withTemporaryDirectory { directory in
            let issued = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.app", teamID: "TEAM123456"))
            let certificatePath = directory + "/client.pem"
            try write(Array(issued.certificatePEM.utf8), to: certificatePath)
            #expect(issued.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))

            let verify = try openssl(["verify", "-x509_strict", "-CAfile", directory + "/ca.pem", "-purpose", "sslclient",
                                      certificatePath])
            #expect(verify.status == 0 && verify.output.contains("\(certificatePath): OK"), "\(verify.output)")
            // Not a server certificate.
            #expect(try openssl(["verify", "-CAfile", directory + "/ca.pem", "-purpose", "sslserver",
                                 certificatePath]).status != 0)

            let subject = try requireOpenSSL(["x509", "-noout", "-subject", "-in", certificatePath])
            #expect(subject.contains(
                "UID = com.example.app, CN = Apple Push Services: com.example.app, OU = TEAM123456, O = APNs Sandbox, C = US"
            ), "\(subject)")
            let text = try requireOpenSSL(["x509", "-noout", "-text", "-in", certificatePath])
            for oid in ["1.2.840.113635.100.6.3.1", "1.2.840.113635.100.6.3.2", "1.2.840.113635.100.6.3.6"] {
                #expect(text.contains(oid), "missing \(oid)")
            }
            #expect(text.contains("TLS Web Client Authentication"))

            // The key is the certificate's.
            let key = try ES256PrivateKey(pem: issued.privateKeyPEM)
            let certificateKey = try requireOpenSSL(["x509", "-noout", "-pubkey", "-in", certificatePath])
            #expect(certificateKey == key.publicKey.pem)

            let info = try ClientCertificateInfo.parse(pem: issued.certificatePEM)
            #expect(info.bundleID == "com.example.app")
            #expect(info.commonName == "Apple Push Services: com.example.app")
            #expect(info.teamID == "TEAM123456")
            #expect(info.topics == ["com.example.app", "com.example.app.voip", "com.example.app.complication"])
            #expect(info.isDevelopment && info.isProduction)
            let now = Int64(Date().timeIntervalSince1970)
            #expect(info.notBefore <= now && info.notBefore > now - 7200)
            #expect(abs(info.notAfter - (now + 365 * 86_400)) < 120)

            let der = try requireDER(of: certificatePath, in: directory)
            #expect(try ClientCertificateInfo.parse(der: der) == info)
        }
    }

    /// `.development` carries only the sandbox flag, `.production` only the production flag.
    @Test func environmentFlagsFollowRequest() throws {
        try withTemporaryDirectory { directory in
            let development = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.dev", environment: .development))
            let developmentInfo = try ClientCertificateInfo.parse(pem: development.certificatePEM)
            #expect(developmentInfo.isDevelopment && !developmentInfo.isProduction)
            #expect(developmentInfo.topics.count == 3)

            let production = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.prod", environment: .production,
                                                                  validityDays: 30))
            let productionInfo = try ClientCertificateInfo.parse(pem: production.certificatePEM)
            #expect(!productionInfo.isDevelopment && productionInfo.isProduction)
            #expect(productionInfo.notAfter - productionInfo.notBefore == 30 * 86_400 + 3600)
        }
    }

    /// Explicit topics are written as given; an empty list leaves the topic extension out.
    @Test func explicitAndEmptyTopicLists() throws {
        try withTemporaryDirectory { directory in
            let topics = ["com.example.app", "com.example.app.voip", "com.example.app.push-type.liveactivity",
                          "com.example.other"]
            let custom = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.app", topics: topics))
            #expect(try ClientCertificateInfo.parse(pem: custom.certificatePEM).topics == topics)

            let legacy = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.app", topics: [],
                                                                  environment: .development))
            let info = try ClientCertificateInfo.parse(pem: legacy.certificatePEM)
            #expect(info.topics.isEmpty && info.bundleID == "com.example.app" && info.isDevelopment)
        }
    }

    /// Issuing into an empty directory creates the CA first; later certificates reuse it.
    @Test func createsCAWhenMissingAndReusesIt() throws {
        try withTemporaryDirectory { base in
            let directory = base + "/tls"
            let first = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.one"))
            let ca = try read(directory + "/ca.pem")
            let second = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: "com.example.two"))
            #expect(try read(directory + "/ca.pem") == ca)
            for (index, issued) in [first, second].enumerated() {
                let path = directory + "/client\(index).pem"
                try write(Array(issued.certificatePEM.utf8), to: path)
                #expect(try openssl(["verify", "-CAfile", directory + "/ca.pem", path]).status == 0)
            }
        }
    }

    /// The server leaf has none of Apple's extensions: empty topics, no flags, no UID.
    @Test func parsesCertificateWithoutAPNsExtensions() throws {
        try withTemporaryDirectory { directory in
            let files = try CertificateAuthority.ensureServerCertificate(in: directory)
            let info = try ClientCertificateInfo.parse(pem: String(contentsOfFile: files.certificateChain, encoding: .utf8))
            #expect(info.bundleID == nil)
            #expect(info.commonName == "APNs Sandbox")
            #expect(info.topics.isEmpty)
            #expect(!info.isDevelopment && !info.isProduction)
            #expect(info.notAfter > info.notBefore)
        }
    }

    /// Garbage throws a CryptoError instead of crashing.
    @Test func garbageThrows() throws {
        #expect(throws: CryptoError.self) { try ClientCertificateInfo.parse(der: []) }
        #expect(throws: CryptoError.self) { try ClientCertificateInfo.parse(der: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: CryptoError.self) { try ClientCertificateInfo.parse(der: Array("hello world".utf8)) }
        #expect(throws: CryptoError.self) { try ClientCertificateInfo.parse(pem: "no certificate here") }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let length = Int.random(in: 0...300, using: &generator)
            let garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: CryptoError.self) { try ClientCertificateInfo.parse(der: [0x30, 0x82] + garbage) }
        }
    }

    /// A certificate whose topic extension is not a well-formed SEQUENCE throws.
    @Test func malformedTopicExtensionThrows() throws {
        try withTemporaryDirectory { directory in
            let authority = try CertificateAuthority.loadAuthorityForIssuing(in: directory)
            for value: [UInt8] in [[0x30, 0x05, 0x0C, 0x01], [0x0C, 0x01, 0x61], [0x30, 0x80, 0x00, 0x00],
                                   [0x30, 0x03, 0x0C, 0x01, 0xFF]] {
                let builder = X509Builder(commonName: "bad", validityDays: 1, extensions: [
                    .custom(oid: APNsCertificateOID.topics, critical: false, der: value),
                ])
                let certificate = try builder.issue(subjectKey: PrivateKey.generateP256(), issuer: authority)
                let error = try #require(throws: CryptoError.self) {
                    try ClientCertificateInfo.parse(der: certificate.derEncoded())
                }
                #expect(error.description.contains("topic extension"), "\(error)")
            }
        }
    }

    /// Unusable bundle IDs, topics, team IDs and validities are rejected before anything is written.
    @Test func rejectsInvalidRequests() throws {
        try withTemporaryDirectory { directory in
            let requests = [
                ClientCertificateRequest(bundleID: ""),
                ClientCertificateRequest(bundleID: "com.example app"),
                ClientCertificateRequest(bundleID: "com.example,O=Apple"),
                ClientCertificateRequest(bundleID: String(repeating: "a", count: 256)),
                ClientCertificateRequest(bundleID: "com.example.app", topics: ["com.example.app", ""]),
                ClientCertificateRequest(bundleID: "com.example.app", validityDays: 0),
                ClientCertificateRequest(bundleID: "com.example.app", teamID: ""),
            ]
            for request in requests {
                #expect(throws: CryptoError.self) {
                    try CertificateAuthority.issueClientCertificate(in: directory + "/tls", request: request)
                }
            }
            #expect(!FileManager.default.fileExists(atPath: directory + "/tls"))
        }
    }

    /// Long bundle IDs (CN over 64 characters, topic list over 255 bytes) still work.
    @Test func longBundleIDs() throws {
        try withTemporaryDirectory { directory in
            let bundleID = "com." + String(repeating: "verylongcompanyname", count: 6) + ".app"
            let issued = try CertificateAuthority.issueClientCertificate(
                in: directory, request: ClientCertificateRequest(bundleID: bundleID))
            let info = try ClientCertificateInfo.parse(pem: issued.certificatePEM)
            #expect(info.bundleID == bundleID)
            #expect(info.topics == [bundleID, bundleID + ".voip", bundleID + ".complication"])
        }
    }

    /// The topic list is Apple's encoding, byte for byte.
    @Test func topicListEncodingMatchesApple() throws {
        let encoded = APNsTopicList.encode(["a.b", "a.b.voip", "a.b.complication", "x.y"], bundleID: "a.b")
        func utf8(_ text: String) -> [UInt8] { [0x0C, UInt8(text.utf8.count)] + Array(text.utf8) }
        func type(_ text: String) -> [UInt8] { [0x30, UInt8(text.utf8.count + 2)] + utf8(text) }
        let content = utf8("a.b") + type("app") + utf8("a.b.voip") + type("voip")
            + utf8("a.b.complication") + type("complication") + utf8("x.y") + type("app")
        #expect(encoded == [0x30, UInt8(content.count)] + content)
        #expect(try APNsTopicList.decode(encoded[...]) == ["a.b", "a.b.voip", "a.b.complication", "x.y"])
    }

    /// Lengths above 127 use the long form, and the reader refuses malformed lengths.
    @Test func derLengthsAndMalformedInput() throws {
        #expect(DERWriter.encodedLength(0) == [0x00])
        #expect(DERWriter.encodedLength(127) == [0x7F])
        #expect(DERWriter.encodedLength(128) == [0x81, 0x80])
        #expect(DERWriter.encodedLength(255) == [0x81, 0xFF])
        #expect(DERWriter.encodedLength(256) == [0x82, 0x01, 0x00])
        #expect(DERWriter.encodedLength(70_000) == [0x83, 0x01, 0x11, 0x70])

        let topics = (0..<40).map { "com.example.app\($0)" }
        let encoded = APNsTopicList.encode(topics, bundleID: "com.example.app")
        #expect(encoded.count > 300 && encoded[1] == 0x82)
        #expect(try APNsTopicList.decode(encoded[...]) == topics)

        let malformed: [[UInt8]] = [
            [], [0x30], [0x30, 0x05, 0x0C], [0x30, 0x80, 0x00, 0x00], [0x30, 0x81, 0x05, 0, 0, 0, 0, 0],
            [0x30, 0x82, 0x00, 0x90], [0x30, 0x85, 1, 1, 1, 1, 1], [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x1F, 0x01, 0x00], [0x0C, 0x00], [0x30, 0x00, 0x00], [0x30, 0x02, 0x0C, 0x05],
            [0x30, 0x03, 0x0C, 0x01, 0xC3],
        ]
        for bytes in malformed {
            #expect(throws: MalformedDER.self, "\(bytes)") { try APNsTopicList.decode(bytes[...]) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            var bytes = encoded
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            bytes.removeLast(Int.random(in: 0...3, using: &generator))
            _ = try? APNsTopicList.decode(bytes[...])  // must return or throw, never trap
        }
    }
}

/// The DER form of the PEM certificate at `path`, via the openssl CLI.
private func requireDER(of path: String, in directory: String) throws -> [UInt8] {
    let out = directory + "/cert.der"
    try requireOpenSSL(["x509", "-in", path, "-outform", "DER", "-out", out])
    return try read(out)
}
