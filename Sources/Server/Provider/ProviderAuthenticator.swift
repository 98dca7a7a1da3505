// APNs Sandbox — token (JWT ES256) and certificate authentication of provider requests.
import APNsProtocol
import Crypto
import HTTP
import Intake
import Sandbox
import Transport

/// Authenticates provider requests exactly as APNs does, per connection.
///
/// Token auth: the `authorization: bearer <JWT>` is parsed, its key found by `kid`, its `iss`
/// checked against the key's team, its ES256 signature verified once (then cached), its `iat`
/// checked on every push; the connection is bound to the team and kind of key of its first push,
/// and the token may change at most once per `tokenUpdateMinimumInterval`.
/// Certificate auth: a trusted client certificate replaces the token; its subject UID and topic
/// extension decide the topics, its environment extensions the environments.
struct ProviderAuthenticator: Sendable {
    let metrics: SandboxMetrics?
    let keys: ProviderKeyStore
    let registry: DeviceRegistry
    let settings: APNsSettings
    let verifiedTokens = VerifiedTokenCache()
    let environmentKeyReason: APNsReason

    init(keys: ProviderKeyStore, registry: DeviceRegistry, settings: APNsSettings, metrics: SandboxMetrics? = nil) {
        self.metrics = metrics
        self.keys = keys
        self.registry = registry
        self.settings = settings
        self.environmentKeyReason = settings.environmentKeyReason.reason
    }

    /// - Parameters:
    ///   - headers: the validated APNs headers.
    ///   - connection: the connection the push came on (session state, client certificate).
    ///   - environment: the environment the request addressed.
    ///   - nowSeconds / monotonicNow: wall-clock seconds and monotonic nanoseconds.
    func authenticate(
        headers: PushHeaders, connection: ConnectionInfo, environment: APNsEnvironment,
        nowSeconds: Int64, monotonicNow: UInt64
    ) -> Result<AuthenticatedPush, APNsError> {
        if let certificate = certificateInfo(connection: connection, nowSeconds: nowSeconds) {
            switch certificate {
            case .success(let info):
                return authenticateCertificate(info, headers: headers, environment: environment)
            case .failure(let error):
                return .failure(error)
            }
        }
        return authenticateToken(headers: headers, connection: connection, environment: environment,
                                 nowSeconds: nowSeconds, monotonicNow: monotonicNow)
    }

    // MARK: Certificates

    /// nil when the connection presented no client certificate.
    private func certificateInfo(connection: ConnectionInfo, nowSeconds: Int64) -> Result<ClientCertificateInfo, APNsError>? {
        let state = ProviderConnection.of(connection.session, metrics: metrics).withState { state in
            if case .notChecked = state.certificate {
                state.certificate = Self.certificateState(connection.peerCertificate)
            }
            return state.certificate
        }
        switch state {
        case .notChecked, .none:
            return nil
        case .invalid(let cause):
            return .failure(APNsError(.badCertificate, cause: cause))
        case .valid(let info):
            if nowSeconds < info.notBefore {
                return .failure(APNsError(.badCertificate, cause: "client certificate not valid before \(Self.time(info.notBefore))"))
            }
            if nowSeconds > info.notAfter {
                return .failure(APNsError(.badCertificate, cause: "client certificate expired at \(Self.time(info.notAfter))"))
            }
            return .success(info)
        }
    }

    /// What a presented certificate is worth: trusted and readable, or why not.
    private static func certificateState(_ peer: PeerCertificate?) -> ProviderConnectionState.CertificateState {
        guard let peer else { return .none }
        guard peer.isTrusted else {
            return .invalid(peer.verificationFailure ?? "client certificate not issued by the sandbox CA")
        }
        do {
            return .valid(try ClientCertificateInfo.parse(der: peer.der))
        } catch {
            return .invalid("client certificate is not an APNs certificate: \(error)")
        }
    }

    private func authenticateCertificate(
        _ info: ClientCertificateInfo, headers: PushHeaders, environment: APNsEnvironment
    ) -> Result<AuthenticatedPush, APNsError> {
        switch environment {
        case .development where !info.isDevelopment, .production where !info.isProduction:
            let other: APNsEnvironment = environment == .development ? .production : .development
            return .failure(APNsError(.badCertificateEnvironment,
                cause: "client certificate is for \(other.rawValue) only; the push is for \(environment.rawValue)"))
        default:
            break
        }
        guard let certificateBundle = info.bundleID ?? info.topics.first else {
            return .failure(APNsError(.badCertificate, cause: "client certificate names no bundle ID (no UID, no topics)"))
        }
        let allowedTopics = info.topics.isEmpty ? [certificateBundle] : info.topics
        let topic: String
        if let requested = headers.topic {
            guard allowedTopics.contains(requested) else {
                return .failure(APNsError(.topicDisallowed,
                    cause: "topic \(ProviderToken.quoted(requested)) is not one of the client certificate's "
                        + "(\(allowedTopics.map(ProviderToken.quoted).joined(separator: ", ")))"))
            }
            topic = requested
        } else {
            // One topic: APNs uses the certificate's subject. Several: the header is required.
            guard allowedTopics.count == 1 else {
                return .failure(APNsError(.missingTopic,
                    cause: "the client certificate has \(allowedTopics.count) topics; apns-topic must name one"))
            }
            topic = allowedTopics[0]
        }
        if let pushType = headers.pushType, pushType.requiresTokenAuth {
            return .failure(APNsError(.topicDisallowed,
                cause: "push type \(pushType.rawValue) needs token authentication, not a certificate"))
        }
        let bundleID: String
        switch PushRequestValidator.bundleID(topic: topic, pushType: headers.pushType, priority: headers.priority) {
        case .success(let bundle): bundleID = bundle
        case .failure(let error): return .failure(error)
        }
        let teamID = info.teamID ?? registry.app(bundleID: bundleID)?.teamID
        if registry.app(bundleID: bundleID) == nil {
            guard settings.autoRegisterApps else { return .failure(Self.unknownApp(bundleID)) }
            registry.upsert(App(bundleID: bundleID, teamID: teamID ?? "CERTIFICATE"))
        }
        return .success(AuthenticatedPush(
            authentication: .certificate(bundleID: certificateBundle), topic: topic, bundleID: bundleID, teamID: teamID))
    }

    // MARK: Provider tokens

    private func authenticateToken(
        headers: PushHeaders, connection: ConnectionInfo, environment: APNsEnvironment,
        nowSeconds: Int64, monotonicNow: UInt64
    ) -> Result<AuthenticatedPush, APNsError> {
        let session = connection.session
        let providerConnection = ProviderConnection.of(session, metrics: metrics)
        // Fast path: the same token as the previous push on this connection.
        let current = providerConnection.withState { $0.currentToken }
        let token: ProviderConnectionState.CurrentToken
        if let current, let authorization = headers.authorization, let jwt = Self.bearerToken(authorization), jwt == current.raw {
            token = current
        } else {
            switch verify(authorization: headers.authorization, monotonicNow: monotonicNow) {
            case .success(let verified): token = verified
            case .failure(let error): return .failure(error)
            }
        }
        let key: ProviderKey
        switch signingKey(keyID: token.keyID, teamID: token.teamID) {
        case .success(let found): key = found
        case .failure(let error): return .failure(error)
        }
        if case .failure(let error) = checkIssue(issuedAt: token.issuedAt, key: key, environment: environment, nowSeconds: nowSeconds) {
            return .failure(error)
        }
        // Connection binding and token updates.
        let intervalNanoseconds = settings.tokenUpdateMinimumIntervalSeconds.nanoseconds
        let binding: Result<Bool, APNsError> = providerConnection.withState { state in
            if let team = state.boundTeamID, team != key.teamID {
                return .failure(APNsError(.forbidden,
                    cause: "the connection belongs to team \(team) (its first push); key \(key.keyID) is team \(key.teamID)'s"))
            }
            let isTeamScoped = key.scope == .team
            if let first = state.firstKey, first.keyID != key.keyID {
                if first.isTeamScoped != isTeamScoped || first.environment != key.environment {
                    return .failure(APNsError(.unrelatedKeyIdInToken, cause: Self.unrelatedKeys(first, key)))
                }
            }
            if let previous = state.currentToken, previous.raw != token.raw {
                let elapsed = monotonicNow &- previous.since
                if elapsed < intervalNanoseconds {
                    return .failure(APNsError(.tooManyProviderTokenUpdates,
                        cause: "the token changed \(elapsed / 1_000_000) ms after the previous change (min \(intervalNanoseconds / 1_000_000) ms)"))
                }
                var updated = token
                updated.since = monotonicNow
                state.currentToken = updated
            } else if state.currentToken == nil {
                var first = token
                first.since = monotonicNow
                state.currentToken = first
            }
            if state.firstKey == nil { state.firstKey = (key.keyID, isTeamScoped, key.environment) }
            let raise = !state.hasRaisedStreamLimit
            state.hasRaisedStreamLimit = true
            return .success(raise)
        }
        switch binding {
        case .failure(let error): return .failure(error)
        case .success(let raise):
            if raise && settings.streamsBeforeAuthentication > 0 { session.setMaxConcurrentStreams(UInt32.max) }
        }
        // Topic rules.
        let topic: String
        let bundleID: String
        switch PushRequestValidator.topic(headers) {
        case .success(let checked): (topic, bundleID) = checked
        case .failure(let error): return .failure(error)
        }
        if case .failure(let error) = checkTopic(topic, bundleID: bundleID, key: key, registering: true) {
            return .failure(error)
        }
        // Bind the team at the first push that passed every check above.
        providerConnection.withState { state in
            if state.boundTeamID == nil { state.boundTeamID = key.teamID }
        }
        return .success(AuthenticatedPush(
            authentication: .token(keyID: key.keyID, teamID: key.teamID, issuedAt: token.issuedAt),
            topic: topic, bundleID: bundleID, teamID: key.teamID))
    }

    /// Parses and verifies a token not seen on this connection before.
    private func verify(authorization: String?, monotonicNow: UInt64) -> Result<ProviderConnectionState.CurrentToken, APNsError> {
        let parsed: ProviderToken
        switch ProviderToken.parse(authorization: authorization) {
        case .success(let token): parsed = token
        case .failure(let error): return .failure(error)
        }
        let key: ProviderKey
        switch signingKey(keyID: parsed.keyID, teamID: parsed.teamID) {
        case .success(let found): key = found
        case .failure(let error): return .failure(error)
        }
        if case .failure(let error) = checkSignature(parsed, key: key) { return .failure(error) }
        return .success(ProviderConnectionState.CurrentToken(
            raw: parsed.raw, keyID: parsed.keyID, teamID: parsed.teamID, issuedAt: parsed.issuedAt, since: monotonicNow))
    }

    /// The JWT of a `bearer <jwt>` value (scheme in any case, one space), cheaply, for comparing
    /// with the connection's current token. Anything else returns nil and takes the full parse.
    static func bearerToken(_ authorization: String) -> Substring? {
        let utf8 = authorization.utf8
        guard utf8.count > 7 else { return nil }
        let scheme = authorization.prefix(7)
        guard scheme.utf8.elementsEqual("bearer ".utf8) || scheme.lowercased() == "bearer " else { return nil }
        return authorization.dropFirst(7)
    }
}

/// The intake's authentication stage runs it on the connection each push came on.
extension ProviderAuthenticator: PushAuthenticating {
    func authenticate(
        _ headers: PushHeaders, connection: ConnectionInfo, environment: APNsEnvironment, nowSeconds: Int64,
        monotonicNow: UInt64
    ) -> Result<AuthenticatedPush, APNsError> {
        authenticate(
            headers: headers, connection: connection, environment: environment, nowSeconds: nowSeconds,
            monotonicNow: monotonicNow)
    }
}
