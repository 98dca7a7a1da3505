// APNs Sandbox — a fault rule: which pushes it matches, what it does to them, how often and for how long.
import APNsProtocol

/// A rule of fault injection (`/api/v1/faults`, the configuration's `faults`): a ``FaultMatch`` and a
/// ``FaultAction``, optionally with a ``FaultLatency`` before the answer, applied with a probability (drawn from
/// the rule's own seeded generator), a number of times or until an instant. ``FaultBook`` keeps the rules in
/// order; the first rule that matches a push and wins its draw is the one applied.
public struct FaultRule: Sendable, Equatable {
    /// Where a rule came from.
    public enum Source: String, Sendable, Codable {
        case configuration, api
    }

    /// `flt_` and 12 hex digits unless given.
    public var id: String
    public var name: String?
    public var match: FaultMatch
    public var action: FaultAction
    /// Added before the answer (for a connection action: before it is carried out).
    public var latency: FaultLatency?
    /// 0…1; 1 applies to every matching push.
    public var probability: Double
    /// The seed of the rule's generator (probability and latency draws): the same seed, the same sequence.
    public var seed: UInt64
    /// Applications left; nil: no limit.
    public var count: Int?
    /// Sandbox-clock milliseconds after which the rule no longer applies; nil: never.
    public var expiresAt: Int64?
    /// Only pushes beyond this many per second (counted over the pushes the match selects, on the sandbox clock)
    /// are affected: the `throttle` preset.
    public var abovePerSecond: Int?
    public var createdAt: Int64
    public var source: Source

    public init(
        id: String, name: String? = nil, match: FaultMatch = FaultMatch(), action: FaultAction,
        latency: FaultLatency? = nil, probability: Double = 1, seed: UInt64, count: Int? = nil,
        expiresAt: Int64? = nil, abovePerSecond: Int? = nil, createdAt: Int64, source: Source = .api
    ) {
        self.id = id
        self.name = name
        self.match = match
        self.action = action
        self.latency = latency
        self.probability = probability
        self.seed = seed
        self.count = count
        self.expiresAt = expiresAt
        self.abovePerSecond = abovePerSecond
        self.createdAt = createdAt
        self.source = source
    }
}

/// Which pushes a rule applies to: every condition given must hold (none given: every push).
public struct FaultMatch: Sendable, Equatable {
    /// The device token (lowercase hex), exactly.
    public var deviceToken: String?
    /// The device token starts with these (lowercase) hex digits.
    public var tokenPrefix: String?
    /// `apns-topic` as the push resolved it (the bundle ID plus a suffix such as `.voip`).
    public var topic: String?
    public var bundleID: String?
    public var pushType: PushType?
    public var priority: Int?
    public var environment: APNsEnvironment?
    /// The provider token's team and key (pushes with a certificate have neither).
    public var teamID: String?
    public var keyID: String?
    /// Request headers (lowercase names) and the exact values they must have.
    public var headers: [String: String]
    /// The push's `apns-id` (lowercase).
    public var apnsID: String?
    /// The provider connection's id (`connectionId` in push records).
    public var connectionID: UInt64?

    public init(
        deviceToken: String? = nil, tokenPrefix: String? = nil, topic: String? = nil, bundleID: String? = nil,
        pushType: PushType? = nil, priority: Int? = nil, environment: APNsEnvironment? = nil,
        teamID: String? = nil, keyID: String? = nil, headers: [String: String] = [:], apnsID: String? = nil,
        connectionID: UInt64? = nil
    ) {
        self.deviceToken = deviceToken
        self.tokenPrefix = tokenPrefix
        self.topic = topic
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.environment = environment
        self.teamID = teamID
        self.keyID = keyID
        self.headers = headers
        self.apnsID = apnsID
        self.connectionID = connectionID
    }

    /// Whether `push` meets every condition.
    public func matches(_ push: FaultSubject) -> Bool {
        if let deviceToken, deviceToken != push.deviceToken { return false }
        if let tokenPrefix, !push.deviceToken.hasPrefix(tokenPrefix) { return false }
        if let topic, topic != push.topic { return false }
        if let bundleID, bundleID != push.bundleID { return false }
        if let pushType, pushType != push.pushType { return false }
        if let priority, priority != push.priority { return false }
        if let environment, environment != push.environment { return false }
        if let teamID, teamID != push.teamID { return false }
        if let keyID, keyID != push.keyID { return false }
        if let apnsID, apnsID != push.apnsID { return false }
        if let connectionID, connectionID != push.connectionID { return false }
        for (name, value) in headers {
            guard push.headers.contains(where: { $0.name == name && $0.value == value }) else { return false }
        }
        return true
    }
}

/// What a rule sees of a push: it has passed APNs' path, header and authentication checks.
public struct FaultSubject: Sendable {
    public var deviceToken: String
    public var topic: String
    public var bundleID: String
    /// nil when `apns-push-type` was left out.
    public var pushType: PushType?
    public var priority: Int
    public var environment: APNsEnvironment
    public var teamID: String?
    public var keyID: String?
    public var headers: [(name: String, value: String)]
    public var apnsID: String
    public var connectionID: UInt64

    public init(
        deviceToken: String, topic: String, bundleID: String, pushType: PushType?, priority: Int,
        environment: APNsEnvironment, teamID: String?, keyID: String?, headers: [(name: String, value: String)],
        apnsID: String, connectionID: UInt64
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.environment = environment
        self.teamID = teamID
        self.keyID = keyID
        self.headers = headers
        self.apnsID = apnsID
        self.connectionID = connectionID
    }
}

/// What a rule does to a push it applies to.
public enum FaultAction: Sendable, Equatable {
    /// Answers this row of Apple's reason table (its status); a 410 carries `timestamp` (now when nil).
    case reject(APNsReason, timestamp: Int64?)
    /// HTTP/2 GOAWAY with `{"reason": reason}` as debug data and `errorCode`, then the connection closes; the push
    /// is not taken. (HTTP/1.1: the connection closes.)
    case goAway(reason: String, errorCode: UInt32)
    /// RST_STREAM with `errorCode` instead of an answer; the push is not taken. (HTTP/1.1: the connection closes.)
    case resetStream(errorCode: UInt32)
    /// The TCP connection closes without an answer; the push is not taken.
    case closeConnection
    /// The connection stops reading; the push is handled as usual but its answer waits `milliseconds` (nil:
    /// until the client gives up).
    case stall(milliseconds: Int64?)
    /// The push is handled as usual; its answer goes out `bytesPerChunk` bytes every `intervalMilliseconds`.
    case trickle(bytesPerChunk: Int, intervalMilliseconds: Int64)
    /// The push is handled as usual; then SETTINGS_MAX_CONCURRENT_STREAMS is `to` for `milliseconds`.
    case limitConcurrentStreams(to: UInt32, milliseconds: Int64)
    /// Accepted (200) and then `delivery` on the device side.
    case deliver(DeliveryFault)
    /// Nothing but the latency (or only counting).
    case none

    /// The kind as the API names it.
    public var kind: String {
        switch self {
        case .reject: "reject"
        case .goAway: "goAway"
        case .resetStream: "resetStream"
        case .closeConnection: "close"
        case .stall: "stall"
        case .trickle: "trickle"
        case .limitConcurrentStreams: "limitConcurrentStreams"
        case .deliver(let fault): fault.name
        case .none: "latency"
        }
    }

    /// Whether the push is dropped without being taken (no answer, nothing stored).
    public var dropsPush: Bool {
        switch self {
        case .goAway, .resetStream, .closeConnection: true
        default: false
        }
    }
}

/// A delay before the answer.
public enum FaultLatency: Sendable, Equatable {
    case fixed(milliseconds: Int64)
    /// Uniform over `[min, max]`.
    case uniform(minMilliseconds: Int64, maxMilliseconds: Int64)
    /// Normal with this mean and standard deviation, clamped at 0.
    case normal(meanMilliseconds: Int64, standardDeviationMilliseconds: Int64)

    /// A draw from `generator`.
    public func draw(_ generator: inout SeededGenerator) -> Int64 {
        switch self {
        case .fixed(let milliseconds):
            return max(0, milliseconds)
        case .uniform(let low, let high):
            return low >= high ? low : Int64.random(in: low...high, using: &generator)
        case .normal(let mean, let deviation):
            // Irwin–Hall: the sum of 12 uniforms less 6 is close to a standard normal (within ±6σ).
            var z = -6.0
            for _ in 0..<12 { z += Double.random(in: 0..<1, using: &generator) }
            return max(0, Int64((Double(mean) + z * Double(deviation)).rounded()))
        }
    }
}

/// SplitMix64: small, fast and the same on every platform, so a seed gives the same sequence everywhere.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
