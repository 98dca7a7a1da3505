// APNs Sandbox — minting provider tokens over the API (the dashboard's "Send a push" form).
import Crypto
import Foundation
import HTTP
import Sandbox
import Synchronization
import Support

/// `GET /api/v1/provider-tokens`: the configured keys and whether the sandbox can sign with them.
/// `POST /api/v1/provider-tokens` (body optional: `{"keyId", "teamId"}`): a provider token (ES256 JWT)
/// signed with a configured key's `.p8`, issued at the SANDBOX's time (valid under a virtual clock).
///
/// Re-use: APNs answers `TooManyProviderTokenUpdates` when a connection changes token too often and
/// `ExpiredProviderToken` after an hour, so the same token is handed out for a key while it is younger
/// than ``reuseSeconds`` (40 minutes of sandbox time), then a new one. The token is never logged.
final class ProviderTokenRoutes: Sendable {
    static let reuseSeconds: Int64 = 40 * 60
    static let lifetimeSeconds: Int64 = 3600

    struct Request: APIRequestBody {
        static let fields = ["keyId", "teamId"]
        var keyId: String?
        var teamId: String?
    }

    struct Issued: Encodable, Sendable {
        var token: String
        var keyId: String
        var teamId: String
        var issuedAt: Int64
        var expiresAt: Int64
        var renewAfter: Int64
    }

    struct KeyInfo: Encodable {
        var keyId: String
        var teamId: String
        var scope: String
        var topics: [String]
        var environment: String
        var canSign: Bool
    }

    struct KeyList: Encodable {
        var keys: [KeyInfo]
    }

    let teams: [TeamConfiguration]
    let baseDirectory: String?
    let clock: any SandboxClock
    /// Parsed `.p8` keys (read once, on a worker thread) and the last token per key.
    private let signingKeys = Locked<[String: ES256PrivateKey]>([:])
    private let issued = Locked<[String: Issued]>([:])

    init(configuration: SandboxConfiguration, clock: any SandboxClock) {
        self.teams = configuration.teams
        self.baseDirectory = configuration.baseDirectory
        self.clock = clock
    }

    func register(on router: inout Router) {
        router.get("/api/v1/provider-tokens") { [self] _, _ in .response(.json(encoding: list())) }
        router.post("/api/v1/provider-tokens") { [self] request, _ in
            // May read and parse the .p8 and signs: a worker thread's job, not an event loop's.
            .blocking { [self] in
                let issued = try mint(body: request.body)
                let accept = request.headers["accept"] ?? ""
                if accept.contains("application/jwt") {
                    return .text(issued.token, contentType: "application/jwt")
                }
                return .json(encoding: issued)
            }
        }
    }

    func list() -> KeyList {
        KeyList(keys: teams.flatMap { team in
            team.keys.map { key in
                KeyInfo(keyId: key.keyID, teamId: team.teamID, scope: key.scope.rawValue, topics: key.topics,
                        environment: key.environment.rawValue, canSign: key.privateKeyFile != nil)
            }
        })
    }

    func mint(body: [UInt8]) throws -> Issued {
        let request = try APIBody.decode(Request.self, from: body, allowEmpty: true) ?? Request()
        let (team, key, file) = try choose(request)
        let now = clock.nowMilliseconds / 1000
        let cacheKey = "\(team)/\(key)"
        if let current = issued.withLock({ $0[cacheKey] }), current.issuedAt <= now, now < current.renewAfter {
            return current
        }
        let privateKey = try signingKey(file: file, keyID: key)
        let token: String
        do {
            token = try ProviderTokenSigner.makeToken(keyID: key, teamID: team, issuedAt: now, key: privateKey)
        } catch {
            throw APIError(status: 422, code: "signing_failed", message: "key \(key): cannot sign: \(error)")
        }
        let fresh = Issued(token: token, keyId: key, teamId: team, issuedAt: now,
                           expiresAt: now + Self.lifetimeSeconds, renewAfter: now + Self.reuseSeconds)
        issued.withLock { $0[cacheKey] = fresh }
        return fresh
    }

    /// The key to sign with: the requested one, else the first with a `privateKeyFile`.
    private func choose(_ request: Request) throws -> (team: String, key: String, file: String) {
        for team in teams where request.teamId == nil || team.teamID == request.teamId {
            for key in team.keys where request.keyId == nil || key.keyID == request.keyId {
                if let file = key.privateKeyFile { return (team.teamID, key.keyID, file) }
                if request.keyId != nil {
                    throw APIError(status: 422, code: "key_cannot_sign",
                                   message: "key \(key.keyID) has no privateKeyFile; configure teams[].keys[].privateKeyFile")
                }
            }
        }
        if request.keyId != nil || request.teamId != nil {
            let what = [request.teamId.map { "team \($0)" }, request.keyId.map { "key \($0)" }].compactMap { $0 }
            throw APIError(status: 404, code: "key_not_found",
                           message: "no configured \(what.joined(separator: " with ")) (teams[].keys[] in the configuration)")
        }
        throw APIError(status: 404, code: "no_signing_key",
                       message: "no key with a privateKeyFile; configure teams[].keys[].privateKeyFile")
    }

    private func signingKey(file: String, keyID: String) throws -> ES256PrivateKey {
        if let key = signingKeys.withLock({ $0[keyID] }) { return key }
        let path = CredentialTools.resolve(file, against: baseDirectory)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APIError(status: 422, code: "key_unreadable", message: "key \(keyID): cannot read its privateKeyFile")
        }
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: String(decoding: data, as: UTF8.self))
        } catch {
            throw APIError(status: 422, code: "key_invalid", message: "key \(keyID): its privateKeyFile is not a PKCS#8 P-256 key")
        }
        signingKeys.withLock { $0[keyID] = key }
        return key
    }
}
