// APNs Sandbox — stage 4: the fault rule that applies to a push, if any, and what it does to the answer.
import APNsProtocol
import Sandbox

/// What the fault rule applied to a push changes in its handling.
public struct FaultEffect: Sendable {
    public var applied: AppliedFault
    public var action: FaultAction
    /// Real-time milliseconds the answer waits.
    public var latencyMilliseconds: Int64

    public init(applied: AppliedFault, action: FaultAction, latencyMilliseconds: Int64) {
        self.applied = applied
        self.action = action
        self.latencyMilliseconds = latencyMilliseconds
    }
}

/// Tries the ``FaultBook``'s rules on a push that passed the path, header and authentication checks.
public struct FaultStage: Sendable {
    public enum Verdict: Sendable {
        /// On to the next stage (with ``IntakePush/fault`` set when a rule applied that lets the push through).
        case proceed
        /// The rule answers this reason instead.
        case refuse(APNsError)
        /// The rule drops the push: a GOAWAY, an RST_STREAM or a close instead of an answer.
        case drop
    }

    public let book: any FaultDecider

    public init(_ book: any FaultDecider) {
        self.book = book
    }

    public func run(_ push: inout IntakePush, observer: (any IntakeObserver)?) -> Verdict {
        guard !book.isEmpty, let token = push.token, let headers = push.headers, let authenticated = push.authenticated,
            let effect = effect(token: token, headers: headers, authenticated: authenticated, push: push)
        else { return .proceed }
        push.fault = effect
        observer?.faultApplied(effect.action)
        switch effect.action {
        case .reject(let reason, let timestamp): return .refuse(APNsError(reason, timestamp: timestamp ?? push.now))
        case let action where action.dropsPush: return .drop
        default: return .proceed
        }
    }

    private func effect(
        token: DeviceToken, headers: PushHeaders, authenticated: AuthenticatedPush, push: IntakePush
    ) -> FaultEffect? {
        var keyID: String?
        if case .token(let key, _, _) = authenticated.authentication { keyID = key }
        let subject = FaultSubject(
            deviceToken: token.hex, topic: authenticated.topic, bundleID: authenticated.bundleID,
            pushType: headers.pushType, priority: headers.priority, environment: push.record.environment,
            teamID: authenticated.teamID, keyID: keyID, headers: push.submission.headers, apnsID: push.record.apnsID,
            connectionID: push.submission.connectionID)
        guard let decision = book.decide(subject, now: push.now) else { return nil }
        var detail = Self.describe(decision.action, now: push.now)
        if decision.latencyMilliseconds > 0 { detail += " after \(decision.latencyMilliseconds) ms" }
        var delivery: DeliveryFault?
        if case .deliver(let fault) = decision.action { delivery = fault }
        let applied = AppliedFault(
            ruleID: decision.ruleID, name: decision.name, action: decision.action.kind, detail: detail,
            delivery: delivery, dropsPush: decision.action.dropsPush)
        return FaultEffect(applied: applied, action: decision.action, latencyMilliseconds: decision.latencyMilliseconds)
    }

    /// What an action does, in words (the record's `fault.detail`).
    public static func describe(_ action: FaultAction, now: Int64) -> String {
        switch action {
        case .reject(let reason, _): "answered \(reason.status) \(reason.rawValue)"
        case .goAway(let reason, let errorCode): "GOAWAY \(reason) (error code \(errorCode)), connection closed, push not taken"
        case .resetStream(let errorCode): "RST_STREAM (error code \(errorCode)) instead of an answer, push not taken"
        case .closeConnection: "connection closed without an answer, push not taken"
        case .stall(let milliseconds):
            milliseconds.map { "connection stalled for \($0) ms before the answer" } ?? "connection stalled, no answer"
        case .trickle(let bytes, let interval): "answer sent \(bytes) byte(s) every \(interval) ms"
        case .limitConcurrentStreams(let to, let milliseconds): "MAX_CONCURRENT_STREAMS cut to \(to) for \(milliseconds) ms"
        case .deliver(.lose): "accepted, then lost before the device"
        case .deliver(.deliverLate(let milliseconds)): "accepted, delivered \(milliseconds) ms late"
        case .deliver(.extensionCrash): "accepted; the service extension crashes"
        case .deliver(.extensionTimeout): "accepted; the service extension never answers"
        case .none: "answered as usual"
        }
    }
}
