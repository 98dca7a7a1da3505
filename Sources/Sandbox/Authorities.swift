// APNs Sandbox — the state a push's intake consults, each behind a protocol: in memory today (one instance), shared
// by several instances later (issue #36: one PostgreSQL).
import APNsProtocol

/// Which devices exist and may receive a push: the unknown-token policy, environments, installed apps
/// (``DeviceRegistry`` in memory).
public protocol DeviceDirectory: Sendable {
    /// The app the sandbox knows by this bundle ID, if any.
    func app(bundleID: String) -> App?
    /// Whether a push for `bundleID` may go to `token`, registering an unknown token when the policy says so.
    /// - Returns: nil when it may, else APNs' refusal.
    func resolve(token: DeviceToken, environment: APNsEnvironment, bundleID: String, now: Int64) -> APNsError?
    /// ``resolve(token:environment:bundleID:now:)`` without registering anything.
    func check(token: DeviceToken, environment: APNsEnvironment, bundleID: String, now: Int64) -> APNsError?
}

extension DeviceRegistry: DeviceDirectory {}

/// The fault rules and their counters (``FaultBook`` in memory): which rule, if any, applies to a push.
public protocol FaultDecider: Sendable {
    /// True when there is no rule (a push then costs no lock).
    var isEmpty: Bool { get }
    /// The rule that applies to `push` at `now` (sandbox-clock ms), counted as applied; nil when none does.
    func decide(_ push: FaultSubject, now: Int64) -> FaultBook.Decision?
}

extension FaultBook: FaultDecider {}
