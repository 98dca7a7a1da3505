// APNs Sandbox — the provider endpoint's HTTP shape of the intake's answers.
import APNsProtocol
import HTTP
import Intake
import Sandbox
@testable import Server
import Testing

@Suite struct ProviderAnswerTests {
    private func fault(_ action: FaultAction) -> FaultEffect {
        FaultEffect(
            applied: AppliedFault(ruleID: "r", name: nil, action: action.kind, detail: "", dropsPush: action.dropsPush),
            action: action, latencyMilliseconds: 0)
    }

    /// 200: `apns-id` and (development) `apns-unique-id`, no body and no content type.
    @Test func acceptedPush() {
        let response = ProviderEndpoint.response(PushAnswer(apnsID: "id-1", uniqueID: "u-1", environment: .development))
        #expect(response.status == 200 && response.body.isEmpty && response.connectionFault == nil)
        #expect(response.headers["apns-id"] == "id-1" && response.headers["apns-unique-id"] == "u-1")
        #expect(response.headers["content-type"] == nil)
    }

    /// A refusal: its status, `{"reason":…}` as JSON, `allow: POST` with `MethodNotAllowed`, a 410's timestamp.
    @Test func refusals() {
        let notAllowed = ProviderEndpoint.response(PushAnswer(
            error: APNsError(.methodNotAllowed), apnsID: "id-2", environment: .production))
        #expect(notAllowed.status == 405 && notAllowed.headers["allow"] == "POST")
        #expect(notAllowed.headers["content-type"] == "application/json")
        #expect(String(decoding: notAllowed.body, as: UTF8.self) == #"{"reason":"MethodNotAllowed"}"#)
        #expect(notAllowed.headers["apns-unique-id"] == nil)
        let gone = ProviderEndpoint.response(PushAnswer(
            error: APNsError(.unregistered, timestamp: 1_700_000_000_000), apnsID: "id-3", environment: .production))
        #expect(gone.status == 410 && gone.headers["allow"] == nil)
        #expect(String(decoding: gone.body, as: UTF8.self) == #"{"reason":"Unregistered","timestamp":1700000000000}"#)
    }

    /// A fault's connection effect rides on the answer; a dropped push's answer is only the carrier of its GOAWAY.
    @Test func faults() {
        var stalled = PushAnswer(apnsID: "id-4", environment: .production)
        stalled.fault = fault(.stall(milliseconds: 250))
        #expect(ProviderEndpoint.response(stalled).connectionFault == .stall(nanoseconds: 250_000_000))
        var dropped = PushAnswer(apnsID: "id-5", environment: .production)
        dropped.fault = fault(.goAway(reason: "Shutdown", errorCode: 0))
        let response = ProviderEndpoint.response(dropped)
        #expect(dropped.isDropped && response.status == 500)
        #expect(response.connectionFault == .goAway(errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8)))
    }
}
