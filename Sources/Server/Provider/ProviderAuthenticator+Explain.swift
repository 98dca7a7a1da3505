// APNs Sandbox — a provider token explained without a push: `POST /api/v1/provider-tokens/validate`.
import APNsProtocol
import Sandbox

/// What ``ProviderAuthenticator/explain(authorization:topic:environment:nowSeconds:)`` found, step by step.
struct TokenExplanation: Sendable {
    /// The token, when it parsed.
    var token: ProviderToken?
    /// The key its `kid` names, when the sandbox knows it (also when its team differs from `iss`).
    var key: ProviderKey?
    /// Whether the signature verifies with ``key``; nil when not checked (no token, no key).
    var signatureValid: Bool?
    /// What APNs would answer, with its cause; nil: the token would be accepted.
    var rejection: APNsError?
}

extension ProviderAuthenticator {
    /// The token checks of a push's first use of a token, in the provider endpoint's order and with its code
    /// (``ProviderToken/parse(authorization:)``, ``signingKey(keyID:teamID:)``, ``checkSignature(_:key:)``,
    /// ``checkIssue(issuedAt:key:environment:nowSeconds:)``, with a topic ``checkTopic(_:bundleID:key:registering:)``
    /// without registering anything), minus what belongs to a connection (its team, its first key, the token-update
    /// interval). Changes no state but the cache of verified signatures.
    /// - Parameters:
    ///   - authorization: `bearer <jwt>`, as a push would send it.
    ///   - topic: The push's `apns-topic`, if the topic rules should be checked too.
    func explain(authorization: String, topic: String?, environment: APNsEnvironment, nowSeconds: Int64) -> TokenExplanation {
        var explanation = TokenExplanation()
        let token: ProviderToken
        switch ProviderToken.parse(authorization: authorization) {
        case .success(let parsed): token = parsed
        case .failure(let error):
            explanation.rejection = error
            return explanation
        }
        explanation.token = token
        explanation.key = keys[token.keyID]
        // Checked as soon as the key is known, to be shown also when its team differs from iss (the push would be
        // refused for that first).
        let signature = explanation.key.map { checkSignature(token, key: $0) }
        if let signature {
            if case .success = signature { explanation.signatureValid = true } else { explanation.signatureValid = false }
        }
        let key: ProviderKey
        switch signingKey(keyID: token.keyID, teamID: token.teamID) {
        case .success(let found): key = found
        case .failure(let error):
            explanation.rejection = error
            return explanation
        }
        if case .failure(let error)? = signature {
            explanation.rejection = error
            return explanation
        }
        if case .failure(let error) = checkIssue(issuedAt: token.issuedAt, key: key, environment: environment, nowSeconds: nowSeconds) {
            explanation.rejection = error
            return explanation
        }
        guard let topic else { return explanation }
        let headers = PushHeaders(topic: topic)
        switch PushRequestValidator.topic(headers) {
        case .success(let checked):
            if case .failure(let error) = checkTopic(checked.topic, bundleID: checked.bundleID, key: key, registering: false) {
                explanation.rejection = error
            }
        case .failure(let error):
            explanation.rejection = error
        }
        return explanation
    }
}
