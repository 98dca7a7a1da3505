// APNs Sandbox — the `reason` strings of APNs error responses and their HTTP status codes.

/// Why APNs rejected a request: the `reason` of the JSON error body.
///
/// Raw values are Apple's exact spellings (reference §1.7); case names are the same words in lower camel case.
/// ``badPayload`` is the one sandbox extension.
public enum APNsReason: String, Sendable, CaseIterable {
    // MARK: 400 Bad Request

    /// `apns-collapse-id` is longer than 64 bytes.
    case badCollapseId = "BadCollapseId"
    /// The device token is invalid, or belongs to the other environment.
    case badDeviceToken = "BadDeviceToken"
    /// `apns-expiration` is invalid.
    case badExpirationDate = "BadExpirationDate"
    /// `apns-id` is not a UUID.
    case badMessageId = "BadMessageId"
    /// `apns-priority` is invalid, or not allowed for the push type.
    case badPriority = "BadPriority"
    /// `apns-topic` is invalid.
    case badTopic = "BadTopic"
    /// The device token does not belong to the topic.
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    /// A header was repeated.
    case duplicateHeaders = "DuplicateHeaders"
    /// Idle timeout (Apple gives no detail).
    case idleTimeout = "IdleTimeout"
    /// `apns-push-type` is not one of the known values.
    case invalidPushType = "InvalidPushType"
    /// `:path` carries no device token.
    case missingDeviceToken = "MissingDeviceToken"
    /// `apns-topic` is required but absent.
    case missingTopic = "MissingTopic"
    /// The request body is empty.
    case payloadEmpty = "PayloadEmpty"
    /// Pushing to this topic is not allowed.
    case topicDisallowed = "TopicDisallowed"
    /// Sandbox extension: the body is not a JSON object with an `aps` dictionary.
    ///
    /// Apple's behaviour for such bodies is undocumented (real APNs may accept them and drop the
    /// notification later); the sandbox rejects them with 400 so that client bugs surface at once.
    case badPayload = "BadPayload"

    // MARK: 403 Forbidden

    /// The client certificate is invalid.
    case badCertificate = "BadCertificate"
    /// The client certificate is for the other environment.
    case badCertificateEnvironment = "BadCertificateEnvironment"
    /// The provider token's `iat` is more than one hour old.
    case expiredProviderToken = "ExpiredProviderToken"
    /// The action is not allowed.
    case forbidden = "Forbidden"
    /// The provider token is malformed, not ES256, or its signature does not verify.
    case invalidProviderToken = "InvalidProviderToken"
    /// No certificate and no (or an empty) `authorization` header.
    case missingProviderToken = "MissingProviderToken"
    /// The key ID is unrelated to the key used for the first push on this connection.
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    /// The key is scoped to the other environment: the spelling of Apple's documentation.
    case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    /// The key is scoped to the other environment: the spelling the live service has been seen to return.
    case badEnvironmentKeyInToken = "BadEnvironmentKeyInToken"

    // MARK: 404, 405

    /// `:path` is not `/3/device/<token>`.
    case badPath = "BadPath"
    /// `:method` is not `POST`.
    case methodNotAllowed = "MethodNotAllowed"

    // MARK: 410 Gone (the error body carries a `timestamp`)

    /// The device token has expired.
    case expiredToken = "ExpiredToken"
    /// The device token is no longer active for the topic.
    case unregistered = "Unregistered"

    // MARK: 413, 429, 500, 503

    /// The payload is over the push type's limit.
    case payloadTooLarge = "PayloadTooLarge"
    /// The provider token changed more often than once per 20 minutes on one connection.
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    /// Too many consecutive requests to the same device token.
    case tooManyRequests = "TooManyRequests"
    /// Internal server error.
    case internalServerError = "InternalServerError"
    /// The service is unavailable.
    case serviceUnavailable = "ServiceUnavailable"
    /// The server is shutting down.
    case shutdown = "Shutdown"

    /// The HTTP status APNs sends with this reason.
    public var status: Int {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .badPayload:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        }
    }
}
