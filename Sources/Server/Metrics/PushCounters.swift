// APNs Sandbox — pushes by answer, push type, environment and transport, resolved before the first push.
import APNsProtocol
import HTTP
import Metrics

/// `apns_sandbox_pushes_total{status, reason, push_type, environment, transport}` and
/// `apns_sandbox_provider_auth_failures_total{reason}`.
///
/// Every combination's counter exists from the start, in one array indexed by position, so counting a push
/// is an index computation and one atomic add: no string, no dictionary, no lock on the event loop.
/// Combinations still at 0 are left out of the scrape.
struct PushCounters: Sendable {
    /// nil first: the 200 answer.
    static let reasons: [APNsReason?] = [nil] + APNsReason.allCases
    /// nil first: no (or an unknown) `apns-push-type`.
    static let pushTypes: [PushType?] = [nil] + PushType.allCases
    static let environments = APNsEnvironment.allCases
    static let transports = ["h2", "h2c", "http1.1", "http1.0"]

    private let pushes: [Counter]
    private let authFailures: [Counter]
    private let reasonIndex: [APNsReason: Int]

    init(registry: MetricsRegistry) {
        let family = registry.counter(
            "apns_sandbox_pushes_total",
            help: "Pushes answered by the provider endpoint, by HTTP status, APNs reason (none on 200), push type, environment and transport.",
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
        authFailures = APNsReason.allCases.map { auth.labels($0.rawValue) }
        reasonIndex = Dictionary(uniqueKeysWithValues: APNsReason.allCases.enumerated().map { ($1, $0) })
    }

    /// Counts one answer: `reason` nil for 200.
    func count(reason: APNsReason?, pushType: PushType?, environment: APNsEnvironment, request: HTTPRequest) {
        let reasonPosition = reason.flatMap { reasonIndex[$0].map { $0 + 1 } } ?? 0
        let pushTypePosition = pushType.flatMap { type in Self.pushTypes.firstIndex { $0 == type } } ?? 0
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
        if let position = reasonIndex[reason] { authFailures[position].increment() }
    }
}
