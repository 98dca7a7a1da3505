// APNs Sandbox — the parts of a fault rule as JSON: `match`, `action` and `latency`.
import APNsProtocol
import Sandbox
import Support

/// `match`: every field given must hold.
struct FaultMatchSpec: Codable, Sendable, Equatable, StrictlyKeyed {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case deviceToken, tokenPrefix, topic, bundleId, pushType, priority, environment, teamId, keyId, headers
        case apnsId, connectionId
    }
    typealias Keys = CodingKeys

    var deviceToken: String?
    var tokenPrefix: String?
    var topic: String?
    var bundleId: String?
    var pushType: String?
    var priority: Int?
    var environment: String?
    var teamId: String?
    var keyId: String?
    var headers: [String: String]?
    var apnsId: String?
    var connectionId: UInt64?

    init() {}

    init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        deviceToken = try section(.deviceToken, \.deviceToken)
        tokenPrefix = try section(.tokenPrefix, \.tokenPrefix)
        topic = try section(.topic, \.topic)
        bundleId = try section(.bundleId, \.bundleId)
        pushType = try section(.pushType, \.pushType)
        priority = try section(.priority, \.priority)
        environment = try section(.environment, \.environment)
        teamId = try section(.teamId, \.teamId)
        keyId = try section(.keyId, \.keyId)
        headers = try section(.headers, \.headers)
        apnsId = try section(.apnsId, \.apnsId)
        connectionId = try section(.connectionId, \.connectionId)
    }

    init(_ match: FaultMatch) {
        deviceToken = match.deviceToken
        tokenPrefix = match.tokenPrefix
        topic = match.topic
        bundleId = match.bundleID
        pushType = match.pushType?.rawValue
        priority = match.priority
        environment = match.environment?.rawValue
        teamId = match.teamID
        keyId = match.keyID
        headers = match.headers.isEmpty ? nil : match.headers
        apnsId = match.apnsID
        connectionId = match.connectionID
    }

    func match() throws(FaultRuleSpec.Problem) -> FaultMatch {
        func problem(_ field: String, _ message: String) -> FaultRuleSpec.Problem {
            FaultRuleSpec.Problem(field: "match.\(field)", message: message)
        }
        func isHex(_ text: String) -> Bool { text.allSatisfy { $0.isHexDigit && $0.isASCII } }
        if let deviceToken, DeviceToken(hex: deviceToken) == nil {
            throw problem("deviceToken", "must be a device token (32–400 hex digits, an even number)")
        }
        if let tokenPrefix, tokenPrefix.isEmpty || tokenPrefix.count > 400 || !isHex(tokenPrefix) {
            throw problem("tokenPrefix", "must be 1–400 hex digits")
        }
        var pushType: PushType?
        if let name = self.pushType {
            guard let type = PushType(rawValue: name) else {
                throw problem("pushType", "is not one of: \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            pushType = type
        }
        if let priority, ![1, 5, 10].contains(priority) { throw problem("priority", "must be 1, 5 or 10") }
        var environment: APNsEnvironment?
        if let name = self.environment {
            guard let value = APNsEnvironment(rawValue: name) else { throw problem("environment", "must be development or production") }
            environment = value
        }
        var lowercasedHeaders: [String: String] = [:]
        for (name, value) in headers ?? [:] {
            guard !name.isEmpty else { throw problem("headers", "a header name is empty") }
            lowercasedHeaders[name.lowercased()] = value
        }
        if let apnsId, !UUIDGenerator.isCanonical(apnsId) {
            throw problem("apnsId", "must be a UUID (8-4-4-4-12 hex digits)")
        }
        return FaultMatch(
            deviceToken: deviceToken?.lowercased(), tokenPrefix: tokenPrefix?.lowercased(), topic: topic, bundleID: bundleId,
            pushType: pushType, priority: priority, environment: environment, teamID: teamId, keyID: keyId,
            headers: lowercasedHeaders, apnsID: apnsId?.lowercased(), connectionID: connectionId)
    }
}

/// `latency`: `{"fixedMilliseconds"}`, `{"minMilliseconds", "maxMilliseconds"}` (uniform) or
/// `{"meanMilliseconds", "standardDeviationMilliseconds"}` (normal).
struct FaultLatencySpec: Codable, Sendable, Equatable, StrictlyKeyed {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case fixedMilliseconds, minMilliseconds, maxMilliseconds, meanMilliseconds, standardDeviationMilliseconds
    }
    typealias Keys = CodingKeys

    var fixedMilliseconds: Int64?
    var minMilliseconds: Int64?
    var maxMilliseconds: Int64?
    var meanMilliseconds: Int64?
    var standardDeviationMilliseconds: Int64?

    init() {}

    init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        fixedMilliseconds = try section(.fixedMilliseconds, \.fixedMilliseconds)
        minMilliseconds = try section(.minMilliseconds, \.minMilliseconds)
        maxMilliseconds = try section(.maxMilliseconds, \.maxMilliseconds)
        meanMilliseconds = try section(.meanMilliseconds, \.meanMilliseconds)
        standardDeviationMilliseconds = try section(.standardDeviationMilliseconds, \.standardDeviationMilliseconds)
    }

    init(_ latency: FaultLatency) {
        switch latency {
        case .fixed(let milliseconds): fixedMilliseconds = milliseconds
        case .uniform(let low, let high): (minMilliseconds, maxMilliseconds) = (low, high)
        case .normal(let mean, let deviation): (meanMilliseconds, standardDeviationMilliseconds) = (mean, deviation)
        }
    }

    /// Latencies above this are refused (a client would have given up long before).
    static let maxMilliseconds: Int64 = 600_000

    func latency() throws(FaultRuleSpec.Problem) -> FaultLatency {
        let range: ClosedRange<Int64> = 0...Self.maxMilliseconds
        func check(_ value: Int64, _ field: String) throws(FaultRuleSpec.Problem) {
            guard range.contains(value) else {
                throw FaultRuleSpec.Problem(field: "latency.\(field)", message: "must be 0 to \(Self.maxMilliseconds)")
            }
        }
        switch (fixedMilliseconds, minMilliseconds, maxMilliseconds, meanMilliseconds, standardDeviationMilliseconds) {
        case (let fixed?, nil, nil, nil, nil):
            try check(fixed, "fixedMilliseconds")
            return .fixed(milliseconds: fixed)
        case (nil, let low?, let high?, nil, nil):
            try check(low, "minMilliseconds")
            try check(high, "maxMilliseconds")
            guard low <= high else {
                throw FaultRuleSpec.Problem(field: "latency.maxMilliseconds", message: "must be at least minMilliseconds")
            }
            return .uniform(minMilliseconds: low, maxMilliseconds: high)
        case (nil, nil, nil, let mean?, let deviation?):
            try check(mean, "meanMilliseconds")
            try check(deviation, "standardDeviationMilliseconds")
            return .normal(meanMilliseconds: mean, standardDeviationMilliseconds: deviation)
        default:
            throw FaultRuleSpec.Problem(
                field: "latency",
                message: "give fixedMilliseconds, or minMilliseconds and maxMilliseconds (uniform), or meanMilliseconds and standardDeviationMilliseconds (normal)")
        }
    }
}
