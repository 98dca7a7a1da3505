// APNs Sandbox — what APNs remembers about one provider connection.
import APNsProtocol
import Crypto
import HTTP
import Synchronization
import Support

/// The provider endpoint's object in each `ConnectionSession`.
final class ProviderConnection: Sendable {
    private let state = Locked(ProviderConnectionState())
    /// Counts the connection in `apns_sandbox_provider_connections` while the session keeps this object.
    private let tracker: ProviderConnectionTracker?

    private init(tracker: ProviderConnectionTracker?) {
        self.tracker = tracker
    }

    static func of(_ session: ConnectionSession, metrics: SandboxMetrics? = nil) -> ProviderConnection {
        session.object(ProviderConnection.self) { ProviderConnection(tracker: metrics.map(ProviderConnectionTracker.init)) }
    }

    func withState<R>(_ body: (inout ProviderConnectionState) -> R) -> R {
        state.withLock { body(&$0) }
    }
}

/// Per-connection authentication state (kept in the connection's `ConnectionSession`).
///
/// APNs binds a team (and the kind of key) to a connection at its first push, allows one stream
/// until a valid provider token arrives, and limits how often the token may change.
struct ProviderConnectionState: Sendable {
    /// The token in use and what it said, so a repeated token skips parsing and verification.
    struct CurrentToken: Sendable {
        var raw: String
        var keyID: String
        var teamID: String
        var issuedAt: Int64
        /// Monotonic nanoseconds of the change to this token.
        var since: UInt64
    }

    enum CertificateState: Sendable {
        case notChecked
        case none
        case valid(ClientCertificateInfo)
        /// Untrusted or unreadable; the cause of the `BadCertificate` every push on the connection gets.
        case invalid(String)
    }

    var boundTeamID: String?
    var firstKey: (keyID: String, isTeamScoped: Bool, environment: APNsEnvironment?)?
    var currentToken: CurrentToken?
    var hasRaisedStreamLimit = false
    var certificate: CertificateState = .notChecked
}
