// APNs Sandbox — what the provider endpoint counts of each answer.
import APNsProtocol
import HTTP

/// What `apns_sandbox_pushes_total` counts of one answer: its reason (nil: 200), push type and environment.
struct PushTally: Sendable {
    var reason: APNsReason?
    var pushType: PushType?
    var environment: APNsEnvironment
}

extension ProviderEndpoint {
    /// Counts an answer given to `request` (nil: the push was dropped by a connection fault, never answered).
    func count(_ tally: PushTally?, _ request: HTTPRequest) {
        guard let metrics, let tally else { return }
        metrics.pushes.count(
            reason: tally.reason, pushType: tally.pushType, environment: tally.environment, request: request)
    }

    /// `respond`, counted in `apns_sandbox_provider_pushes_waiting` until it is called (every deferred answer is).
    func waiting(_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> @Sendable (HTTPResponse) -> Void {
        guard let gauge = metrics?.pushesWaiting else { return respond }
        gauge.increment()
        return { response in
            gauge.decrement()
            respond(response)
        }
    }
}
