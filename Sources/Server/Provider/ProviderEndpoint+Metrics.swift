// APNs Sandbox — what the provider endpoint counts of each answer.
import APNsProtocol
import HTTP
import Intake

extension ProviderEndpoint {
    /// Counts an answer given to `request` (`apns_sandbox_pushes_total`: its reason, push type and environment).
    func count(_ answer: PushAnswer, _ request: HTTPRequest) {
        guard let metrics else { return }
        metrics.pushes.count(
            reason: answer.error?.reason, pushType: answer.pushType, environment: answer.environment, request: request)
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
