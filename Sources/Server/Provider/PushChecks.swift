// APNs Sandbox — the provider endpoint's checks that change no state, shared with `/api/v1/pushes/validate`.
import APNsProtocol
import Sandbox

/// Steps of ``ProviderEndpoint/evaluate(_:bodyTooLarge:headersTooLarge:)`` that read but never change
/// state, as single functions so that the endpoint and the validate route run the same code.
enum PushChecks {
    /// The header rules (``PushRequestValidator/headers(_:)``) plus the endpoint's default priority:
    /// APNs defaults it to 10, which background pushes may not use; clients that leave the header out
    /// of background pushes mean the only valid value, 5.
    static func headers(_ list: [(name: String, value: String)]) -> Result<PushHeaders, APNsError> {
        switch PushRequestValidator.headers(list) {
        case .success(var headers):
            if headers.pushType == .background, !list.contains(where: { $0.name == "apns-priority" }) {
                headers.priority = 5
            }
            return .success(headers)
        case .failure(let error):
            return .failure(error)
        }
    }

    /// The topic rules of a token-authenticated push: `MissingTopic`, then
    /// ``PushRequestValidator/bundleID(topic:pushType:priority:)``. Returns the topic and bundle ID.
    static func topic(_ headers: PushHeaders) -> Result<(topic: String, bundleID: String), APNsError> {
        guard let topic = headers.topic else { return .failure(APNsError(.missingTopic)) }
        switch PushRequestValidator.bundleID(topic: topic, pushType: headers.pushType, priority: headers.priority) {
        case .success(let bundle): return .success((topic, bundle))
        case .failure(let error): return .failure(error)
        }
    }
}
