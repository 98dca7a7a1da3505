// APNs Sandbox — stage 3: who sent the push and for which topic.
import APNsProtocol
import Sandbox

/// Authenticates pushes as APNs does. The provider endpoint's authenticator (provider tokens and client
/// certificates, per connection) lives with the endpoint, which knows its connections; the intake sees it only
/// through this protocol.
public protocol PushAuthenticating: Sendable {
    /// What the authenticator reads of the connection a push came on (its session state, its client certificate).
    associatedtype Connection: Sendable

    /// - Parameters:
    ///   - headers: The push's validated headers.
    ///   - environment: The environment the push addressed.
    ///   - nowSeconds / monotonicNow: Sandbox-clock seconds and monotonic nanoseconds.
    func authenticate(
        _ headers: PushHeaders, connection: Connection, environment: APNsEnvironment, nowSeconds: Int64,
        monotonicNow: UInt64
    ) -> Result<AuthenticatedPush, APNsError>
}

/// Runs the authenticator and writes who sent the push into its record; a refusal is counted by the observer.
public struct AuthenticationStage<Authenticator: PushAuthenticating>: Sendable {
    public let authenticator: Authenticator

    public init(_ authenticator: Authenticator) {
        self.authenticator = authenticator
    }

    public func run(
        _ push: inout IntakePush, connection: Authenticator.Connection, observer: (any IntakeObserver)?
    ) -> APNsError? {
        guard let headers = push.headers else { return APNsError(.internalServerError) }
        switch authenticator.authenticate(
            headers, connection: connection, environment: push.record.environment, nowSeconds: push.now / 1000,
            monotonicNow: push.monotonicNow)
        {
        case .success(let authenticated):
            push.authenticated = authenticated
            push.record.authentication = authenticated.authentication
            push.record.topic = authenticated.topic
            push.record.bundleID = authenticated.bundleID
            return nil
        case .failure(let error):
            observer?.authenticationFailed(error.reason)
            return error
        }
    }
}

/// The authentication of a push that is only checked (`POST /api/v1/pushes/validate`): no credentials, only the
/// topic rules of a token connection (`MissingTopic`, ``PushRequestValidator/topic(_:)``) and an app the sandbox
/// knows (`TopicDisallowed` for an unknown one unless apps are auto-registered).
public struct TopicCheck: PushAuthenticating {
    public let registry: any DeviceDirectory
    /// `apns.autoRegisterApps`: an unknown app would be registered by its first push.
    public let autoRegistersApps: Bool

    public init(registry: any DeviceDirectory, autoRegistersApps: Bool) {
        self.registry = registry
        self.autoRegistersApps = autoRegistersApps
    }

    public func authenticate(
        _ headers: PushHeaders, connection: Void, environment: APNsEnvironment, nowSeconds: Int64, monotonicNow: UInt64
    ) -> Result<AuthenticatedPush, APNsError> {
        switch PushRequestValidator.topic(headers) {
        case .success(let checked):
            if registry.app(bundleID: checked.bundleID) == nil, !autoRegistersApps { return .failure(APNsError(.topicDisallowed)) }
            return .success(AuthenticatedPush(authentication: .none, topic: checked.topic, bundleID: checked.bundleID))
        case .failure(let error):
            return .failure(error)
        }
    }
}

/// What the intake reports as it goes (the server's metrics).
public protocol IntakeObserver: Sendable {
    /// A push was refused at authentication with `reason`.
    func authenticationFailed(_ reason: APNsReason)
    /// A fault rule applied to a push.
    func faultApplied(_ action: FaultAction)
}
