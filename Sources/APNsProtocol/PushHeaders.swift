// APNs Sandbox — the validated `apns-*` and `authorization` headers of one push.

/// Headers of a push after ``PushRequestValidator/headers(_:)`` accepted them.
///
/// Absent optional headers are nil; only ``priority`` has a default (10, as on APNs).
public struct PushHeaders: Sendable, Equatable {
    /// `apns-push-type`; nil when the header is absent.
    public var pushType: PushType?
    /// `apns-topic`; nil when absent (allowed for single-topic certificates).
    public var topic: String?
    /// `apns-priority`: 1, 5 or 10; when absent 10, or 5 for a background push (``PushRequestValidator/headers(_:)``).
    public var priority: Int
    /// `apns-expiration` in epoch seconds; 0 means "try once, don't store"; nil when absent.
    public var expiration: Int64?
    /// `apns-collapse-id`, at most 64 UTF-8 bytes; nil when absent or empty.
    public var collapseID: String?
    /// The client's `apns-id`, lowercased; nil when absent (the server then makes one).
    public var apnsID: String?
    /// The raw `authorization` header value, for ``ProviderToken/parse(authorization:)``.
    public var authorization: String?

    /// Headers with the given values; every parameter defaults to "header absent".
    public init(
        pushType: PushType? = nil,
        topic: String? = nil,
        priority: Int = 10,
        expiration: Int64? = nil,
        collapseID: String? = nil,
        apnsID: String? = nil,
        authorization: String? = nil
    ) {
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.authorization = authorization
    }
}
