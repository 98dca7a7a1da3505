// APNs Sandbox — pushes by answer, push type, environment and transport, resolved before the first push.
import APNsProtocol
import HTTP
import Metrics

/// `apns_sandbox_pushes_total{status, reason, push_type, environment, transport}` and
/// `apns_sandbox_provider_auth_failures_total{reason}`.
///
/// Every combination's counter exists from the start, in one array indexed by position, so counting a push
/// is an index computation and one atomic add: no string, no dictionary, no lock on the event loop. A reason's
/// and a push type's position come from a `switch` (`position(of:)`), not from hashing their String raw values.
/// Combinations still at 0 are left out of the scrape.
struct PushCounters: Sendable {
    /// nil first: the 200 answer; then each reason at its `position(of:)` + 1.
    static let reasons: [APNsReason?] = [nil] + APNsReason.allCases.sorted { position(of: $0) < position(of: $1) }
    /// nil first: no (or an unknown) `apns-push-type`; then each type at its `position(of:)` + 1.
    static let pushTypes: [PushType?] = [nil] + PushType.allCases.sorted { position(of: $0) < position(of: $1) }
    static let environments = APNsEnvironment.allCases
    static let transports = ["h2", "h2c", "http1.1", "http1.0"]

    private let pushes: [Counter]
    private let authFailures: [Counter]

    init(registry: MetricsRegistry) {
        // The switches below must number every case 0, 1, 2, … once (checked once, here).
        precondition(Self.reasons.dropFirst().enumerated().allSatisfy { $0 == Self.position(of: $1!) }
            && Self.reasons.count == APNsReason.allCases.count + 1, "APNsReason positions are not 0..<count")
        precondition(Self.pushTypes.dropFirst().enumerated().allSatisfy { $0 == Self.position(of: $1!) }
            && Self.pushTypes.count == PushType.allCases.count + 1, "PushType positions are not 0..<count")
        let family = registry.counter(
            "apns_sandbox_pushes_total",
            help: "Pushes answered by the provider endpoint, by HTTP status, APNs reason (empty on 200), push type, environment and transport.",
            labels: ["status", "reason", "push_type", "environment", "transport"], omitsZeros: true)
        var pushes: [Counter] = []
        pushes.reserveCapacity(Self.reasons.count * Self.pushTypes.count * Self.environments.count * Self.transports.count)
        for reason in Self.reasons {
            for pushType in Self.pushTypes {
                for environment in Self.environments {
                    for transport in Self.transports {
                        pushes.append(family.labels(
                            String(reason?.status ?? 200), reason?.rawValue ?? "", pushType?.rawValue ?? "none",
                            environment.rawValue, transport))
                    }
                }
            }
        }
        self.pushes = pushes
        let auth = registry.counter(
            "apns_sandbox_provider_auth_failures_total",
            help: "Pushes refused by provider authentication (token or certificate), by APNs reason.",
            labels: ["reason"], omitsZeros: true)
        authFailures = Self.reasons.dropFirst().map { auth.labels($0!.rawValue) }
    }

    /// Counts one answer: `reason` nil for 200.
    func count(reason: APNsReason?, pushType: PushType?, environment: APNsEnvironment, request: HTTPRequest) {
        let reasonPosition = reason.map { Self.position(of: $0) + 1 } ?? 0
        let pushTypePosition = pushType.map { Self.position(of: $0) + 1 } ?? 0
        let environmentPosition = environment == .development ? 0 : 1
        let transportPosition: Int
        switch request.version {
        case .http2: transportPosition = request.connection.isTLS ? 0 : 1
        case .http1_1: transportPosition = 2
        case .http1_0: transportPosition = 3
        }
        let index = ((reasonPosition * Self.pushTypes.count + pushTypePosition) * Self.environments.count
            + environmentPosition) * Self.transports.count + transportPosition
        pushes[index].increment()
    }

    func countAuthFailure(_ reason: APNsReason) {
        authFailures[Self.position(of: reason)].increment()
    }
}

extension PushCounters {
    /// The position of `reason` among the counters: a jump table, no hashing of the raw value.
    static func position(of reason: APNsReason) -> Int {
        switch reason {
        case .badCollapseId: 0
        case .badDeviceToken: 1
        case .badExpirationDate: 2
        case .badMessageId: 3
        case .badPriority: 4
        case .badTopic: 5
        case .deviceTokenNotForTopic: 6
        case .duplicateHeaders: 7
        case .idleTimeout: 8
        case .invalidPushType: 9
        case .missingDeviceToken: 10
        case .missingTopic: 11
        case .payloadEmpty: 12
        case .topicDisallowed: 13
        case .badPayload: 14
        case .badCertificate: 15
        case .badCertificateEnvironment: 16
        case .expiredProviderToken: 17
        case .forbidden: 18
        case .invalidProviderToken: 19
        case .missingProviderToken: 20
        case .unrelatedKeyIdInToken: 21
        case .badEnvironmentKeyIdInToken: 22
        case .badEnvironmentKeyInToken: 23
        case .badPath: 24
        case .methodNotAllowed: 25
        case .expiredToken: 26
        case .unregistered: 27
        case .payloadTooLarge: 28
        case .tooManyProviderTokenUpdates: 29
        case .tooManyRequests: 30
        case .internalServerError: 31
        case .serviceUnavailable: 32
        case .shutdown: 33
        }
    }

    /// The position of `pushType` among the counters: a jump table, no hashing of the raw value.
    static func position(of pushType: PushType) -> Int {
        switch pushType {
        case .alert: 0
        case .background: 1
        case .complication: 2
        case .controls: 3
        case .fileprovider: 4
        case .liveactivity: 5
        case .location: 6
        case .mdm: 7
        case .pushtotalk: 8
        case .voip: 9
        case .widgets: 10
        }
    }
}
