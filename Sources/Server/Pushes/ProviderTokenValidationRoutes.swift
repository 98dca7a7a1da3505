// APNs Sandbox — `POST /api/v1/provider-tokens/validate`: why APNs would accept or refuse a provider token.
import APNsProtocol
import HTTP
import Sandbox
import Support

/// Explains a provider token without sending a push, as Apple's Push Notifications Console's token validator
/// does: the header and claims as decoded, the key its `kid` names, its age against `apns.tokenMaxAgeSeconds`,
/// whether the signature verifies, and what APNs would answer with the cause. The checks are the provider
/// endpoint's own (``ProviderAuthenticator/explain(authorization:topic:environment:nowSeconds:)``), on the sandbox
/// clock; what belongs to a connection (its team, the token-update interval) is not checked.
struct ProviderTokenValidationRoutes: Sendable {
    struct Request: APIRequestBody {
        static let fields = ["token", "topic", "environment"]
        var token: String?
        var topic: String?
        var environment: String?
    }

    struct KeyInfo: Encodable {
        var keyId: String
        var found: Bool
        var teamId: String?
        var scope: String?
        var topics: [String]?
        var environment: String?
    }

    struct Explanation: Encodable {
        var valid: Bool
        var status: Int
        var reason: String?
        var cause: String?
        var header: JSON?
        var claims: JSON?
        var key: KeyInfo?
        var issuedAt: Int64?
        var ageSeconds: Int64?
        var maxAgeSeconds: Int64
        var allowedSkewSeconds: Int64
        var signatureValid: Bool?
        var environment: String
        var topic: String?

        enum CodingKeys: String, CodingKey {
            case valid, status, reason, cause, header, claims, key, issuedAt, ageSeconds, maxAgeSeconds
            case allowedSkewSeconds, signatureValid, environment, topic
        }

        /// Every member is written; what is unknown is `null` (not left out).
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(valid, forKey: .valid)
            try container.encode(status, forKey: .status)
            try container.encode(reason, forKey: .reason)
            try container.encode(cause, forKey: .cause)
            try container.encode(header, forKey: .header)
            try container.encode(claims, forKey: .claims)
            try container.encode(key, forKey: .key)
            try container.encode(issuedAt, forKey: .issuedAt)
            try container.encode(ageSeconds, forKey: .ageSeconds)
            try container.encode(maxAgeSeconds, forKey: .maxAgeSeconds)
            try container.encode(allowedSkewSeconds, forKey: .allowedSkewSeconds)
            try container.encode(signatureValid, forKey: .signatureValid)
            try container.encode(environment, forKey: .environment)
            try container.encode(topic, forKey: .topic)
        }
    }

    let authenticator: ProviderAuthenticator
    let settings: APNsSettings
    let clock: any SandboxClock

    func register(on router: inout Router) {
        // One signature check at most, no I/O: answered on the loop, as a push would be.
        router.post("/api/v1/provider-tokens/validate") { [self] request, _ in
            .response(try .json(encoding: validate(body: request.body)))
        }
    }

    func validate(body: [UInt8]) throws -> Explanation {
        guard let request = try APIBody.decode(Request.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        guard let token = request.token else {
            throw APIError(status: 400, code: "missing_field", message: "Field token is required (the JWT, or bearer <JWT>)")
        }
        let environment = try request.environment.map(APIBody.environment) ?? settings.defaultEnvironment
        let nowSeconds = clock.nowMilliseconds / 1000
        // A bare JWT is sent as a push would send it; a whole authorization value is taken as it is.
        let authorization = token.contains(" ") || token.contains("\t") ? token : "bearer " + token
        let found = authenticator.explain(
            authorization: authorization, topic: request.topic, environment: environment, nowSeconds: nowSeconds)
        let (header, claims) = Self.decodedParts(of: authorization)
        var explanation = Explanation(
            valid: found.rejection == nil, status: found.rejection?.status ?? 200,
            reason: found.rejection?.reason.rawValue, cause: found.rejection?.cause, header: header, claims: claims,
            maxAgeSeconds: settings.tokenMaxAgeSeconds.amount, allowedSkewSeconds: settings.tokenClockSkewSeconds.amount,
            signatureValid: found.signatureValid, environment: environment.rawValue, topic: request.topic)
        if let token = found.token {
            explanation.issuedAt = token.issuedAt
            // nil when an extreme iat puts the age beyond Int64 (it is refused as too old or too far ahead anyway).
            let (age, overflow) = nowSeconds.subtractingReportingOverflow(token.issuedAt)
            explanation.ageSeconds = overflow ? nil : age
        }
        if let keyID = found.token?.keyID ?? header?["kid"]?.string {
            explanation.key = Self.keyInfo(keyID: keyID, key: found.key ?? authenticator.keys[keyID])
        }
        return explanation
    }

    static func keyInfo(keyID: String, key: ProviderKey?) -> KeyInfo {
        guard let key else { return KeyInfo(keyId: keyID, found: false) }
        let topics: [String] = if case .topics(let listed) = key.scope { listed.sorted() } else { [] }
        return KeyInfo(
            keyId: keyID, found: true, teamId: key.teamID, scope: key.scope == .team ? "team" : "topics", topics: topics,
            environment: key.environment?.rawValue ?? "both")
    }

    /// The JOSE header and the claims as sent, for showing: each nil when it is not base64url of a JSON value.
    static func decodedParts(of authorization: String) -> (header: JSON?, claims: JSON?) {
        let jwt = authorization.split(whereSeparator: { $0 == " " || $0 == "\t" }).last ?? ""
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        func decoded(_ index: Int) -> JSON? {
            guard index < parts.count, let bytes = Base64URL.decode(parts[index]) else { return nil }
            return try? JSON.parse(bytes)
        }
        return (decoded(0), decoded(1))
    }
}
