// APNs Sandbox — the local certificate authority and the server certificate it issues.
import Foundation
import Support

/// Creates and maintains the sandbox's own TLS certificates: a long-lived local CA that clients
/// trust, and a shorter-lived server certificate issued by it.
///
/// ### Files (in the directory passed to `ensureServerCertificate(in:extraNames:)`)
/// - `ca.pem` / `ca-key.pem`: self-signed CA, EC P-256, CN "APNs Sandbox Local CA", 10 years.
/// - `server.pem` / `server-key.pem`: leaf then CA, EC P-256, CN "APNs Sandbox", 825 days.
///
/// Keys are written with mode 0600, certificates with 0644, each file atomically; a directory
/// this type creates gets mode 0700. Once `ca.pem` exists the CA is never replaced, so clients
/// that trust it keep working; only the server certificate is re-issued.
///
/// Blocking file I/O: call from a dedicated thread or at startup, not from the cooperative pool.
/// Two processes must not run it on the same directory at the same time.
public enum CertificateAuthority {
    static let caCommonName = "APNs Sandbox Local CA"
    static let serverCommonName = "APNs Sandbox"
    /// The names every server certificate carries, before `extraNames`.
    static let defaultServerNames = [
        "localhost", "127.0.0.1", "::1",
        "api.push.apple.com", "api.sandbox.push.apple.com", "api.development.push.apple.com",
    ]
    /// Ten calendar years from today, in days (3652 or 3653, depending on leap days).
    static var caValidityDays: Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let now = Date(timeIntervalSince1970: Double(WallClock.milliseconds()) / 1000)
        guard let end = calendar.date(byAdding: .year, value: 10, to: now),
              let days = calendar.dateComponents([.day], from: now, to: end).day
        else { return 3652 }
        return days
    }
    static let serverValidityDays = 825
    /// A server certificate closer than this to `notAfter` is re-issued.
    static let renewalMarginSeconds = 30 * 86_400

    /// On first start, creates the CA and a server certificate in `directory`; later starts reuse
    /// them, issuing a new server certificate from the existing CA when the current one lacks a
    /// required name, expires within 30 days, or does not match its key or the CA.
    /// - Parameters:
    ///   - directory: Where the four PEM files live; created (mode 0700) when missing.
    ///   - extraNames: Additional host names or IP addresses (detected by form) for the
    ///     server certificate's subjectAltName, on top of `localhost`, `127.0.0.1`, `::1` and the
    ///     three `*.push.apple.com` API hosts.
    /// - Returns: The paths of the CA certificate, the server chain and the server key.
    /// - Throws: `CryptoError` when a name is invalid, `ca.pem` is unreadable or corrupt, the CA
    ///   key is missing or does not match, or OpenSSL or the file system fails.
    public static func ensureServerCertificate(in directory: String, extraNames: [String] = []) throws -> ServerTLSFiles {
        let names = try serverNames(extraNames: extraNames)
        try FileStore.ensureDirectory(directory, permissions: 0o700)
        let layout = Layout(directory: directory)

        let authority = try loadOrCreateAuthority(layout)
        if try isUsableServerCertificate(layout, names: names, ca: authority.certificate) {
            return layout.files
        }
        let caKey = try authority.key ?? loadAuthorityKey(layout, certificate: authority.certificate)
        try issueServerCertificate(layout, names: names, ca: authority.certificate, caKey: caKey)
        return layout.files
    }

    /// Reads the subjectAltName DNS names and IP addresses of every certificate in a PEM file,
    /// in file order; IP addresses in canonical text form (`127.0.0.1`, `::1`).
    /// - Parameter path: A PEM file with one or more certificates.
    /// - Returns: The names; empty when no certificate has a subjectAltName extension.
    /// - Throws: `CryptoError` when the file is missing, unreadable or not valid PEM.
    public static func subjectAlternativeNames(ofCertificateAt path: String) throws -> [String] {
        guard let bytes = try FileStore.readIfPresent(path) else {
            throw CryptoError.missingFile("\(path) does not exist")
        }
        return try Certificate.parseAll(pem: bytes, source: path)
            .flatMap { $0.subjectAlternativeNames() }
            .map(\.description)
    }

    // MARK: - Steps

    /// The default names plus `extraNames`, parsed and without duplicates, in order.
    static func serverNames(extraNames: [String]) throws -> [SubjectAlternativeName] {
        var seen: Set<SubjectAlternativeName> = []
        var names: [SubjectAlternativeName] = []
        for text in defaultServerNames + extraNames {
            let name = try SubjectAlternativeName(parsing: text)
            if seen.insert(name).inserted { names.append(name) }
        }
        return names
    }

    /// Loads `ca.pem`, or creates the CA when it does not exist yet. The key is loaded only on
    /// creation (it is needed later only to issue a server certificate).
    private static func loadOrCreateAuthority(_ layout: Layout) throws -> (certificate: Certificate, key: PrivateKey?) {
        if let bytes = try FileStore.readIfPresent(layout.caCertificate) {
            guard let certificate = try Certificate.parseAll(pem: bytes, source: layout.caCertificate).first else {
                throw CryptoError.invalidPEM("\(layout.caCertificate) holds no certificate")
            }
            return (certificate, nil)
        }
        // No ca.pem means no client can trust this CA yet, so a stray ca-key.pem (from an
        // interrupted first start) is safe to replace. The key is written first: ca.pem marks
        // a complete CA.
        let key = try PrivateKey.generateP256()
        let builder = X509Builder(
            commonName: caCommonName,
            validityDays: caValidityDays,
            extensions: [
                .basicConstraints("critical,CA:TRUE"),
                .keyUsage("critical,keyCertSign,cRLSign"),
                .subjectKeyIdentifier("hash"),
                .authorityKeyIdentifier("keyid:always"),
            ]
        )
        let certificate = try builder.issue(subjectKey: key, issuer: nil)
        try FileStore.writeAtomically(key.pemEncoded(), to: layout.caKey, permissions: 0o600)
        try FileStore.writeAtomically(certificate.pemEncoded(), to: layout.caCertificate, permissions: 0o644)
        return (certificate, key)
    }

    /// The CA certificate and key in `directory`, for issuing further certificates; creates the
    /// CA (and a server certificate) first when `ca.pem` does not exist.
    /// - Throws: As `ensureServerCertificate(in:)`; `CryptoError.missingFile` or `.keyMismatch`
    ///   when `ca-key.pem` is absent or not the key of `ca.pem`.
    static func loadAuthorityForIssuing(in directory: String) throws -> (certificate: Certificate, key: PrivateKey) {
        let layout = Layout(directory: directory)
        if !FileStore.exists(layout.caCertificate) {
            _ = try ensureServerCertificate(in: directory)
        }
        let authority = try loadOrCreateAuthority(layout)
        let key = try authority.key ?? loadAuthorityKey(layout, certificate: authority.certificate)
        return (authority.certificate, key)
    }

    private static func loadAuthorityKey(_ layout: Layout, certificate: Certificate) throws -> PrivateKey {
        guard let bytes = try FileStore.readIfPresent(layout.caKey) else {
            throw CryptoError.missingFile(
                "\(layout.caKey) is missing, so no server certificate can be issued from \(layout.caCertificate); "
                    + "restore the key, or delete ca.pem to create a new CA (clients must then trust the new ca.pem)")
        }
        let key = try PrivateKey(pem: bytes, source: layout.caKey)
        guard certificate.matches(key) else {
            throw CryptoError.keyMismatch("\(layout.caKey) is not the key of \(layout.caCertificate)")
        }
        return key
    }

    /// Whether `server.pem` + `server-key.pem` can be served as they are. Damaged or missing
    /// files count as unusable (they are ours to regenerate); only I/O errors throw.
    private static func isUsableServerCertificate(
        _ layout: Layout, names: [SubjectAlternativeName], ca: Certificate
    ) throws -> Bool {
        guard let chainBytes = try FileStore.readIfPresent(layout.certificateChain),
              let keyBytes = try FileStore.readIfPresent(layout.serverKey),
              let chain = try? Certificate.parseAll(pem: chainBytes, source: layout.certificateChain),
              let key = try? PrivateKey(pem: keyBytes, source: layout.serverKey),
              chain.count == 2,
              try chain[1].derEncoded() == ca.derEncoded()
        else { return false }
        let leaf = chain[0]
        return leaf.isIssued(by: ca)
            && leaf.matches(key)
            && leaf.isValid(forAtLeast: renewalMarginSeconds)
            && Set(names).isSubset(of: Set(leaf.subjectAlternativeNames()))
    }

    private static func issueServerCertificate(
        _ layout: Layout, names: [SubjectAlternativeName], ca: Certificate, caKey: PrivateKey
    ) throws {
        let key = try PrivateKey.generateP256()
        let builder = X509Builder(
            commonName: serverCommonName,
            validityDays: serverValidityDays,
            extensions: [
                .basicConstraints("critical,CA:FALSE"),
                .keyUsage("critical,digitalSignature"),
                .extendedKeyUsage("serverAuth"),
                .subjectKeyIdentifier("hash"),
                .authorityKeyIdentifier("keyid:always"),
                .subjectAlternativeName(names.map(\.configurationValue).joined(separator: ",")),
            ]
        )
        let leaf = try builder.issue(subjectKey: key, issuer: (ca, caKey))
        // Key first: a crash in between leaves a chain that fails `matches`, so it is re-issued.
        try FileStore.writeAtomically(key.pemEncoded(), to: layout.serverKey, permissions: 0o600)
        try FileStore.writeAtomically(leaf.pemEncoded() + ca.pemEncoded(), to: layout.certificateChain,
                                      permissions: 0o644)
    }
}

extension CertificateAuthority {
    /// The four file paths inside the TLS directory.
    private struct Layout {
        let caCertificate: String
        let caKey: String
        let certificateChain: String
        let serverKey: String

        init(directory: String) {
            let base = URL(fileURLWithPath: directory, isDirectory: true)
            caCertificate = base.appendingPathComponent("ca.pem").path
            caKey = base.appendingPathComponent("ca-key.pem").path
            certificateChain = base.appendingPathComponent("server.pem").path
            serverKey = base.appendingPathComponent("server-key.pem").path
        }

        var files: ServerTLSFiles {
            ServerTLSFiles(caCertificate: caCertificate, certificateChain: certificateChain, privateKey: serverKey)
        }
    }
}
