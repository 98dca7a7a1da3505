// APNs Sandbox — a push on its way through the intake's stages: what each stage learned of it so far.
import APNsProtocol
import Sandbox
import Support

/// Who sent a push and for which topic, as the authentication stage found.
public struct AuthenticatedPush: Sendable {
    public var authentication: PushAuthentication
    public var topic: String
    public var bundleID: String
    public var teamID: String?

    public init(authentication: PushAuthentication, topic: String, bundleID: String, teamID: String? = nil) {
        self.authentication = authentication
        self.topic = topic
        self.bundleID = bundleID
        self.teamID = teamID
    }
}

/// The push between stages. ``record`` is the push log's record, filled in as the stages learn (an `apns-id`
/// once the headers are read, the authentication, the fault); the other fields are each stage's result.
public struct IntakePush: Sendable {
    public var submission: PushSubmission
    public var record: PushRecord
    /// Sandbox-clock milliseconds when the push arrived.
    public let now: Int64
    /// Monotonic nanoseconds when it arrived (the provider token's age, its update interval).
    public let monotonicNow: UInt64
    public var token: DeviceToken?
    public var headers: PushHeaders?
    public var authenticated: AuthenticatedPush?
    public var fault: FaultEffect?

    public init(_ submission: PushSubmission, now: Int64, monotonicNow: UInt64) {
        self.submission = submission
        self.now = now
        self.monotonicNow = monotonicNow
        record = PushRecord(
            apnsID: "", deviceToken: "", environment: submission.environment, headers: submission.headers,
            payload: submission.body, authentication: .none, connectionID: submission.connectionID, receivedAt: now)
        record.loopIndex = submission.loopIndex
    }

    /// The push's `apns-id`: the one its headers gave or the intake made, else (refused before its headers were
    /// read) the client's if it sent exactly one valid one, else a new time-ordered one.
    mutating func ensureAPNsID() {
        guard record.apnsID.isEmpty else { return }
        record.apnsID = PushRequestValidator.echoedAPNsID(in: submission.headers)
            ?? UUIDGenerator.makeTimeOrdered(unixMilliseconds: now)
    }
}
