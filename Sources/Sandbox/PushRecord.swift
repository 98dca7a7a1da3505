// APNs Sandbox — what the provider endpoint hands to delivery: every push, accepted or not.
import APNsProtocol

/// How a push was authenticated.
public enum PushAuthentication: Sendable, Equatable {
    /// A provider token (JWT): its key, team and issue time.
    case token(keyID: String, teamID: String, issuedAt: Int64)
    /// A client certificate: the bundle ID in its subject.
    case certificate(bundleID: String)
    /// Not authenticated (the push was rejected before or at authentication).
    case none
}

/// A push as received, with the outcome of validation: accepted (`rejection == nil`) or
/// rejected with its APNs reason. Records are handed to a `PushRecordSink`.
public struct PushRecord: Sendable {
    public var apnsID: String
    /// Set in the development environment (Apple's `apns-unique-id`).
    public var uniqueID: String?
    public var deviceToken: String
    public var topic: String?
    public var bundleID: String?
    public var pushType: PushType?
    public var priority: Int
    public var expiration: Int64?
    public var collapseID: String?
    public var environment: APNsEnvironment
    /// Request headers as received (lowercased names), `authorization` included.
    public var headers: [(name: String, value: String)]
    public var payload: [UInt8]
    public var authentication: PushAuthentication
    public var connectionID: UInt64
    /// The event loop (thread) that received the push; sinks may shard by it.
    public var loopIndex: Int = 0
    /// Milliseconds since the epoch.
    public var receivedAt: Int64
    public var rejection: APNsError?
    /// The fault rule applied to the push, if any (a connection fault that dropped it: no rejection, not accepted).
    public var fault: AppliedFault?

    public init(
        apnsID: String, uniqueID: String? = nil, deviceToken: String, topic: String? = nil, bundleID: String? = nil,
        pushType: PushType? = nil, priority: Int = 10, expiration: Int64? = nil, collapseID: String? = nil,
        environment: APNsEnvironment, headers: [(name: String, value: String)], payload: [UInt8],
        authentication: PushAuthentication, connectionID: UInt64, receivedAt: Int64, rejection: APNsError? = nil
    ) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceToken = deviceToken
        self.topic = topic
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.environment = environment
        self.headers = headers
        self.payload = payload
        self.authentication = authentication
        self.connectionID = connectionID
        self.receivedAt = receivedAt
        self.rejection = rejection
    }

    /// Accepted: neither rejected nor dropped by a fault.
    public var isAccepted: Bool { rejection == nil && !(fault?.dropsPush ?? false) }
}

/// What the push log (``RecentPushes``, `GET /api/v1/pushes`) keeps of a push: what it lists and filters
/// by. Not the headers or the body: ten thousand of them held the provider tokens of every push in memory,
/// and freeing them when they left the log cost the event loops time (the push log went from 2.3 to 1.0 % of
/// a memory-mode push's CPU without them). Immutable, so ``isAccepted`` stays what the push was.
public struct PushLogEntry: Sendable {
    public let apnsID: String
    public let uniqueID: String?
    public let deviceToken: String
    public let topic: String?
    public let bundleID: String?
    public let pushType: PushType?
    public let priority: Int
    public let environment: APNsEnvironment
    public let payloadBytes: Int
    public let authentication: PushAuthentication
    public let connectionID: UInt64
    /// Milliseconds since the epoch.
    public let receivedAt: Int64
    public let rejection: APNsError?
    public let fault: AppliedFault?

    public init(_ push: PushRecord) {
        apnsID = push.apnsID
        uniqueID = push.uniqueID
        deviceToken = push.deviceToken
        topic = push.topic
        bundleID = push.bundleID
        pushType = push.pushType
        priority = push.priority
        environment = push.environment
        payloadBytes = push.payload.count
        authentication = push.authentication
        connectionID = push.connectionID
        receivedAt = push.receivedAt
        rejection = push.rejection
        fault = push.fault
        isAccepted = push.isAccepted
    }

    /// ``PushRecord/isAccepted`` of the push.
    public let isAccepted: Bool
}

/// Where push records go: the delivery layer (durable store and device simulation come next).
public protocol PushRecordSink: Sendable {
    /// Takes one record. Accepted pushes are answered 200 only after this returns.
    func record(_ push: PushRecord)
}
