// APNs Sandbox — the provider endpoint's fault rules: which one applies to a push, and what it does to the answer.
import APNsProtocol
import HTTP
import Sandbox

extension ProviderEndpoint {
    /// What the fault rule applied to a push changes in the endpoint's handling.
    struct FaultEffect {
        var applied: AppliedFault
        var action: FaultAction
        var latencyMilliseconds: Int64

        /// The connection fault the answer carries (stall, trickle, a stream cut; GOAWAY, reset and close
        /// instead of an answer).
        var connectionFault: ConnectionFault? {
            switch action {
            case .goAway(let reason, let errorCode):
                .goAway(errorCode: errorCode, debugData: Array(#"{"reason":"\#(reason)"}"#.utf8))
            case .resetStream(let errorCode): .resetStream(errorCode: errorCode)
            case .closeConnection: .close
            case .stall(let milliseconds): .stall(nanoseconds: milliseconds.map { UInt64($0) * 1_000_000 })
            case .trickle(let bytes, let interval):
                .trickle(bytesPerChunk: bytes, intervalNanoseconds: UInt64(interval) * 1_000_000)
            case .limitConcurrentStreams(let to, let milliseconds):
                .limitConcurrentStreams(to: to, forNanoseconds: UInt64(milliseconds) * 1_000_000)
            case .reject, .deliver, .none: nil
            }
        }
    }

    /// The rule that applies to this push (it passed the path, header and authentication checks), if any.
    func faultEffect(
        token: DeviceToken, headers: PushHeaders, headerList: [(name: String, value: String)],
        authenticated: AuthenticatedPush, environment: APNsEnvironment, apnsID: String, connectionID: UInt64,
        now: Int64
    ) -> FaultEffect? {
        guard !faults.isEmpty else { return nil }
        var keyID: String?
        if case .token(let key, _, _) = authenticated.authentication { keyID = key }
        let subject = FaultSubject(
            deviceToken: token.hex, topic: authenticated.topic, bundleID: authenticated.bundleID,
            pushType: headers.pushType, priority: headers.priority, environment: environment,
            teamID: authenticated.teamID, keyID: keyID, headers: headerList, apnsID: apnsID, connectionID: connectionID)
        guard let decision = faults.decide(subject, now: now) else { return nil }
        var detail = Self.describe(decision.action, now: now)
        if decision.latencyMilliseconds > 0 { detail += " after \(decision.latencyMilliseconds) ms" }
        var delivery: DeliveryFault?
        if case .deliver(let fault) = decision.action { delivery = fault }
        let applied = AppliedFault(
            ruleID: decision.ruleID, name: decision.name, action: decision.action.kind, detail: detail,
            delivery: delivery, dropsPush: decision.action.dropsPush)
        return FaultEffect(applied: applied, action: decision.action, latencyMilliseconds: decision.latencyMilliseconds)
    }

    /// What an action does, in words (the record's `fault.detail`).
    static func describe(_ action: FaultAction, now: Int64) -> String {
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

    /// Sends `response` after `milliseconds` of real time (a fault's latency), or at once.
    func answer(_ response: HTTPResponse, after milliseconds: Int64, _ respond: @escaping @Sendable (HTTPResponse) -> Void) {
        guard milliseconds > 0 else { return respond(response) }
        realTime.schedule(afterMilliseconds: milliseconds) { respond(response) }
    }
}
