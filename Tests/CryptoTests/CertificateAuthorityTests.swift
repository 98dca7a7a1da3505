// APNs Sandbox — tests for the local CA and server certificate generation.
import Foundation
import Testing

@testable import Crypto

@Suite struct CertificateAuthorityTests {
    static let requiredNames = [
        "localhost", "127.0.0.1", "::1",
        "api.push.apple.com", "api.sandbox.push.apple.com", "api.development.push.apple.com",
    ]

    /// A fresh directory creates all four files, keys 0600, and the chain verifies with the openssl CLI.
    @Test func createsVerifiableCertificatesInFreshDirectory() throws {
        try withTemporaryDirectory { base in
            let directory = base + "/tls/nested"
            let files = try CertificateAuthority.ensureServerCertificate(in: directory)

            #expect(files.caCertificate == directory + "/ca.pem")
            #expect(files.certificateChain == directory + "/server.pem")
            #expect(files.privateKey == directory + "/server-key.pem")
            #expect(try permissions(of: directory) == 0o700)
            #expect(try permissions(of: directory + "/ca-key.pem") == 0o600)
            #expect(try permissions(of: files.privateKey) == 0o600)
            #expect(try permissions(of: files.caCertificate) == 0o644)
            #expect(try String(contentsOfFile: files.certificateChain, encoding: .utf8)
                .components(separatedBy: "-----BEGIN CERTIFICATE-----").count == 3)

            let verify = try openssl(["verify", "-x509_strict", "-purpose", "sslserver",
                                      "-CAfile", files.caCertificate, files.certificateChain])
            #expect(verify.status == 0)
            #expect(verify.output.contains("\(files.certificateChain): OK"))

            let san = try openssl(["x509", "-noout", "-ext", "subjectAltName", "-in", files.certificateChain])
            #expect(san.status == 0)
            for name in ["DNS:localhost", "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1",
                         "DNS:api.push.apple.com", "DNS:api.sandbox.push.apple.com",
                         "DNS:api.development.push.apple.com"] {
                #expect(san.output.contains(name), "missing \(name) in \(san.output)")
            }
            let names = try CertificateAuthority.subjectAlternativeNames(ofCertificateAt: files.certificateChain)
            #expect(names == Self.requiredNames)
        }
    }

    /// The CA carries the extensions strict verifiers (Python 3.13, OpenSSL -x509_strict) require.
    @Test func caHasCriticalCAExtensionsAndKeyIdentifiers() throws {
        try withTemporaryDirectory { directory in
            let files = try CertificateAuthority.ensureServerCertificate(in: directory)
            let ca = try openssl(["x509", "-noout", "-subject", "-ext",
                                  "basicConstraints,keyUsage,subjectKeyIdentifier,authorityKeyIdentifier",
                                  "-in", files.caCertificate])
            #expect(ca.output.contains("CN = APNs Sandbox Local CA"))
            #expect(ca.output.contains("X509v3 Basic Constraints: critical"))
            #expect(ca.output.contains("CA:TRUE"))
            #expect(ca.output.contains("Certificate Sign, CRL Sign"))
            #expect(ca.output.contains("X509v3 Subject Key Identifier"))

            let leaf = try openssl(["x509", "-noout", "-subject", "-ext",
                                    "keyUsage,extendedKeyUsage,authorityKeyIdentifier",
                                    "-in", files.certificateChain])
            #expect(leaf.output.contains("CN = APNs Sandbox"))
            #expect(leaf.output.contains("Digital Signature"))
            #expect(leaf.output.contains("TLS Web Server Authentication"))
            #expect(leaf.output.contains("X509v3 Authority Key Identifier"))
        }
    }

    /// A second call reuses every file byte for byte.
    @Test func secondCallReusesFiles() throws {
        try withTemporaryDirectory { directory in
            _ = try CertificateAuthority.ensureServerCertificate(in: directory, extraNames: ["sandbox.test"])
            let before = try snapshot(directory)
            _ = try CertificateAuthority.ensureServerCertificate(in: directory, extraNames: ["SANDBOX.test"])
            #expect(try snapshot(directory) == before)
        }
    }

    /// A new extra name re-issues the leaf from the unchanged CA, and the new leaf verifies.
    @Test func newExtraNameReissuesLeafButKeepsCA() throws {
        try withTemporaryDirectory { directory in
            let files = try CertificateAuthority.ensureServerCertificate(in: directory)
            let before = try snapshot(directory)
            _ = try CertificateAuthority.ensureServerCertificate(in: directory, extraNames: ["10.1.2.3", "push.example.test"])
            let after = try snapshot(directory)

            #expect(after["ca.pem"] == before["ca.pem"])
            #expect(after["ca-key.pem"] == before["ca-key.pem"])
            #expect(after["server.pem"] != before["server.pem"])
            #expect(after["server-key.pem"] != before["server-key.pem"])
            let names = try CertificateAuthority.subjectAlternativeNames(ofCertificateAt: files.certificateChain)
            #expect(names == Self.requiredNames + ["10.1.2.3", "push.example.test"])
            let verify = try openssl(["verify", "-x509_strict", "-CAfile", files.caCertificate, files.certificateChain])
            #expect(verify.status == 0 && verify.output.contains(": OK"))
        }
    }

    /// A leaf that expires within 30 days is replaced; the CA stays.
    @Test func expiringLeafIsReissued() throws {
        try withTemporaryDirectory { directory in
            let files = try CertificateAuthority.ensureServerCertificate(in: directory)
            let caBefore = try snapshot(directory)["ca.pem"]
            let ca = try #require(Certificate.parseAll(pem: read(files.caCertificate), source: "ca").first)
            let caKey = try PrivateKey(pem: read(directory + "/ca-key.pem"), source: "ca-key")
            let key = try PrivateKey.generateP256()
            let shortLived = X509Builder(
                commonName: "APNs Sandbox", validityDays: 10,
                extensions: [.subjectAlternativeName(Self.requiredNames.map {
                    try! SubjectAlternativeName(parsing: $0).configurationValue
                }.joined(separator: ","))])
            let leaf = try shortLived.issue(subjectKey: key, issuer: (ca, caKey))
            try FileStore.writeAtomically(key.pemEncoded(), to: files.privateKey, permissions: 0o600)
            try FileStore.writeAtomically(leaf.pemEncoded() + ca.pemEncoded(), to: files.certificateChain,
                                          permissions: 0o644)
            let shortChain = try read(files.certificateChain)

            _ = try CertificateAuthority.ensureServerCertificate(in: directory)
            #expect(try read(files.certificateChain) != shortChain)
            #expect(try snapshot(directory)["ca.pem"] == caBefore)
            let endDate = try openssl(["x509", "-noout", "-checkend", "\(800 * 86_400)", "-in", files.certificateChain])
            #expect(endDate.status == 0)
        }
    }

    /// A missing or foreign server key makes the leaf be re-issued.
    @Test func missingServerKeyReissuesLeaf() throws {
        try withTemporaryDirectory { directory in
            let files = try CertificateAuthority.ensureServerCertificate(in: directory)
            let before = try read(files.certificateChain)
            try FileManager.default.removeItem(atPath: files.privateKey)
            _ = try CertificateAuthority.ensureServerCertificate(in: directory)
            #expect(try read(files.certificateChain) != before)
            #expect(try permissions(of: files.privateKey) == 0o600)
            let check = try openssl(["x509", "-noout", "-checkend", "0", "-in", files.certificateChain])
            #expect(check.status == 0)
        }
    }

    /// A corrupt ca.pem is a thrown `CryptoError` naming the file, not a crash or a silent new CA.
    @Test func corruptCACertificateThrows() throws {
        try withTemporaryDirectory { directory in
            _ = try CertificateAuthority.ensureServerCertificate(in: directory)
            let corrupt = "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n"
            try corrupt.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)

            let error = #expect(throws: CryptoError.self) {
                try CertificateAuthority.ensureServerCertificate(in: directory)
            }
            #expect(error?.description.contains("ca.pem") == true)
            #expect(try String(contentsOfFile: directory + "/ca.pem", encoding: .utf8) == corrupt)
            #expect(throws: CryptoError.self) {
                try CertificateAuthority.subjectAlternativeNames(ofCertificateAt: directory + "/ca.pem")
            }
        }
    }

    /// Without ca-key.pem a needed re-issue fails with a clear error; the CA is not replaced.
    @Test func missingCAKeyThrowsWhenLeafMustBeReissued() throws {
        try withTemporaryDirectory { directory in
            _ = try CertificateAuthority.ensureServerCertificate(in: directory)
            let caBefore = try read(directory + "/ca.pem")
            try FileManager.default.removeItem(atPath: directory + "/ca-key.pem")
            // Reuse still works without the CA key…
            _ = try CertificateAuthority.ensureServerCertificate(in: directory)
            // …but a new name needs it.
            let error = #expect(throws: CryptoError.self) {
                try CertificateAuthority.ensureServerCertificate(in: directory, extraNames: ["new.example.test"])
            }
            #expect(error?.description.contains("ca-key.pem") == true)
            #expect(try read(directory + "/ca.pem") == caBefore)
        }
    }

    /// Names that are neither DNS names nor IP addresses are rejected before anything is written.
    @Test func rejectsInvalidExtraNames() throws {
        try withTemporaryDirectory { directory in
            for bad in ["", "a b", "evil.test,DNS:other.test", "-leading.test", "ünïcode.test"] {
                #expect(throws: CryptoError.self) {
                    try CertificateAuthority.ensureServerCertificate(in: directory + "/x", extraNames: [bad])
                }
            }
            #expect(!FileManager.default.fileExists(atPath: directory + "/x"))
        }
    }
}

// MARK: - Helpers

private func permissions(of path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

private func snapshot(_ directory: String) throws -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for name in ["ca.pem", "ca-key.pem", "server.pem", "server-key.pem"] {
        files[name] = try read(directory + "/" + name)
    }
    return files
}
