// APNs Sandbox — the provider-token signing keys the sandbox trusts.
import APNsProtocol
import Crypto
import Foundation

/// A signing key as APNs knows it: which team, which topics, which environment.
public struct ProviderKey: Sendable {
    public enum Scope: Sendable, Equatable {
        /// Valid for every topic of the team.
        case team
        /// Valid only for these topics (bundle IDs, or topics with a push-type suffix).
        case topics(Set<String>)
    }

    public var keyID: String
    public var teamID: String
    public var publicKey: ES256PublicKey
    public var scope: Scope
    /// nil: both environments (older keys).
    public var environment: APNsEnvironment?

    public init(keyID: String, teamID: String, publicKey: ES256PublicKey, scope: Scope = .team, environment: APNsEnvironment? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
        self.scope = scope
        self.environment = environment
    }

    /// Whether this key may sign pushes for `topic` (whose app is `bundleID`).
    func allows(topic: String, bundleID: String) -> Bool {
        switch scope {
        case .team: true
        case .topics(let topics): topics.contains(topic) || topics.contains(bundleID)
        }
    }
}

/// Keys by key ID, loaded from the configuration's teams.
public struct ProviderKeyStore: Sendable {
    private var keys: [String: ProviderKey] = [:]

    public init(keys: [ProviderKey] = []) {
        for key in keys { self.keys[key.keyID] = key }
    }

    /// Loads every key of every team; relative key paths are resolved against `baseDirectory`.
    public init(teams: [TeamConfiguration], baseDirectory: String?) throws {
        for team in teams {
            for key in team.keys {
                guard let file = key.publicKeyFile ?? key.privateKeyFile else { continue }
                let path = CredentialTools.resolve(file, against: baseDirectory)
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ConfigurationError("key \(key.keyID): cannot read \(path)")
                }
                let publicKey: ES256PublicKey
                do {
                    publicKey = try ES256PublicKey(pem: String(decoding: data, as: UTF8.self))
                } catch {
                    throw ConfigurationError("key \(key.keyID): \(path) is not an ES256 (P-256) key: \(error)")
                }
                let scope: ProviderKey.Scope = switch key.scope {
                case .team: .team
                case .topics: .topics(Set(key.topics))
                }
                keys[key.keyID] = ProviderKey(
                    keyID: key.keyID, teamID: team.teamID, publicKey: publicKey, scope: scope,
                    environment: key.environment.apnsEnvironment)
            }
        }
    }

    public subscript(keyID: String) -> ProviderKey? { keys[keyID] }

    /// Every key, by key ID.
    public var all: [ProviderKey] { keys.values.sorted { $0.keyID < $1.keyID } }

    public var count: Int { keys.count }
}
