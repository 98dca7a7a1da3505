// APNs Sandbox — the CLI's credential helpers: provider tokens and client certificates.
import Crypto
import Foundation
import Support

/// Makes what a provider needs to talk to the sandbox: a provider token signed with a configured
/// key, or a client certificate signed by the sandbox CA.
public enum CredentialTools {
    /// A provider token (JWT) for `keyID` (default: the first key with a private key file),
    /// signed with that key's `.p8` and issued `issuedAt` (default: now).
    public static func providerToken(
        configuration: SandboxConfiguration, keyID: String? = nil, issuedAt: Int64? = nil
    ) throws -> String {
        for team in configuration.teams {
            for key in team.keys where keyID == nil || key.keyID == keyID {
                guard let file = key.privateKeyFile else { continue }
                let path = resolve(file, against: configuration.baseDirectory)
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ConfigurationError("key \(key.keyID): cannot read \(path)")
                }
                let privateKey = try ES256PrivateKey(pem: String(decoding: data, as: UTF8.self))
                return try ProviderTokenSigner.makeToken(
                    keyID: key.keyID, teamID: team.teamID,
                    issuedAt: issuedAt ?? WallClock.milliseconds() / 1000, key: privateKey)
            }
        }
        if let keyID {
            throw ConfigurationError("no key \(keyID) with a privateKeyFile in the configuration")
        }
        throw ConfigurationError("the configuration has no key with a privateKeyFile")
    }

    /// Issues a client certificate for `bundleID` from the CA in the data directory.
    public static func clientCertificate(
        configuration: SandboxConfiguration, bundleID: String, topics: [String]?, environment: CertificateEnvironment
    ) throws -> IssuedClientCertificate {
        _ = try CertificateAuthority.ensureServerCertificate(
            in: configuration.dataDirectory, extraNames: configuration.tls.extraNames)
        return try CertificateAuthority.issueClientCertificate(
            in: configuration.dataDirectory,
            request: ClientCertificateRequest(bundleID: bundleID, topics: topics, environment: environment))
    }

    static func resolve(_ file: String, against base: String?) -> String {
        guard !file.hasPrefix("/"), let base else { return file }
        return "\(base)/\(file)"
    }
}
