// APNs Sandbox — the provider-token checks that depend on no connection, shared by the provider endpoint and
// `POST /api/v1/provider-tokens/validate`, each refusal with its cause.
import APNsProtocol
import Crypto
import Sandbox
import Support

extension ProviderAuthenticator {
    /// The key a token names: one the sandbox knows (`kid`), of the team the token names (`iss`).
    func signingKey(keyID: String, teamID: String) -> Result<ProviderKey, APNsError> {
        guard let key = keys[keyID] else {
            let teamKeys = keys.all.filter { $0.teamID == teamID }.map(\.keyID)
            let known = teamKeys.isEmpty ? "" : " for team \(teamID) (its keys: \(teamKeys.joined(separator: ", ")))"
            return .failure(Self.invalidToken("kid \(ProviderToken.quoted(keyID)) unknown\(known)"))
        }
        guard key.teamID == teamID else {
            return .failure(Self.invalidToken(
                "team of the key \(key.keyID) (\(key.teamID)) differs from iss (\(ProviderToken.quoted(teamID)))"))
        }
        return .success(key)
    }

    /// The ES256 signature over the token's first two parts, with `key`. A token verified once is remembered
    /// (``VerifiedTokenCache``), so a connection that reconnects with it does not pay for the check again.
    func checkSignature(_ token: ProviderToken, key: ProviderKey) -> Result<Void, APNsError> {
        if verifiedTokens.contains(token.raw) { return .success(()) }
        guard key.publicKey.verify(signature: token.signature, message: token.signingInput) else {
            return .failure(Self.invalidToken("signature does not verify with key \(key.keyID)"))
        }
        verifiedTokens.insert(token.raw)
        return .success(())
    }

    /// The rules on a verified token at the time of a push to `environment`: its age
    /// (`apns.tokenMaxAgeSeconds`: `ExpiredProviderToken`), how far ahead it may be
    /// (`apns.tokenClockSkewSeconds`: `InvalidProviderToken`), then an environment-specific key used for the other
    /// environment (`apns.environmentKeyReason`).
    func checkIssue(issuedAt: Int64, key: ProviderKey, environment: APNsEnvironment, nowSeconds: Int64) -> Result<Void, APNsError> {
        if case .failure(let error) = ProviderToken.checkTime(
            issuedAt: issuedAt, now: nowSeconds, maxAge: settings.tokenMaxAgeSeconds.amount,
            allowedSkew: settings.tokenClockSkewSeconds.amount)
        {
            return .failure(error)
        }
        if let keyEnvironment = key.environment, keyEnvironment != environment {
            return .failure(APNsError(environmentKeyReason,
                cause: "key \(key.keyID) is for \(keyEnvironment.rawValue) only; the push is for \(environment.rawValue)"))
        }
        return .success(())
    }

    /// The topic rules of a token push: the app must be the key's team's (an unknown app is registered for it
    /// with `apns.autoRegisterApps` when `registering`, else refused), and a topic-scoped key must list the topic.
    func checkTopic(_ topic: String, bundleID: String, key: ProviderKey, registering: Bool) -> Result<Void, APNsError> {
        if let app = registry.app(bundleID: bundleID) {
            guard app.teamID == key.teamID else {
                return .failure(APNsError(.topicDisallowed, cause:
                    "token for another team than the topic's app: \(ProviderToken.quoted(bundleID)) is team \(app.teamID)'s, "
                    + "key \(key.keyID) is team \(key.teamID)'s"))
            }
        } else {
            guard settings.autoRegisterApps else { return .failure(Self.unknownApp(bundleID)) }
            if registering { registry.upsert(App(bundleID: bundleID, teamID: key.teamID)) }
        }
        guard key.allows(topic: topic, bundleID: bundleID) else {
            let topics: [String] = if case .topics(let listed) = key.scope { listed.sorted() } else { [] }
            return .failure(APNsError(.topicDisallowed,
                cause: "key \(key.keyID) may sign only for \(topics.joined(separator: ", ")), not \(ProviderToken.quoted(topic))"))
        }
        return .success(())
    }

    // MARK: Causes

    static func invalidToken(_ cause: String) -> APNsError {
        APNsError(.invalidProviderToken, cause: cause)
    }

    static func unknownApp(_ bundleID: String) -> APNsError {
        APNsError(.topicDisallowed, cause: "app \(ProviderToken.quoted(bundleID)) unknown to the sandbox (apns.autoRegisterApps is off)")
    }

    /// `UnrelatedKeyIdInToken`: a connection keeps the kind of key of its first push.
    static func unrelatedKeys(
        _ first: (keyID: String, isTeamScoped: Bool, environment: APNsEnvironment?), _ key: ProviderKey
    ) -> String {
        func kind(_ teamScoped: Bool, _ environment: APNsEnvironment?) -> String {
            "\(teamScoped ? "team-scoped" : "topic-scoped"), \(environment?.rawValue ?? "both environments")"
        }
        return "key \(key.keyID) (\(kind(key.scope == .team, key.environment))) is not of the kind of the connection's "
            + "first key \(first.keyID) (\(kind(first.isTeamScoped, first.environment)))"
    }

    /// An instant for a cause: RFC 3339, UTC.
    static func time(_ seconds: Int64) -> String {
        ISOTimestamp.string(milliseconds: seconds &* 1000)
    }
}
