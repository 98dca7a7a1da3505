// APNs Sandbox — what the intake's tests share: a push, an authenticator that answers as told, a recording sink.
import APNsProtocol
import Intake
import Sandbox
import Support

let token = String(repeating: "ab", count: 32)
let topic = "com.example.app"
let payload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

func submission(
    method: String = "POST", path: String = "/3/device/\(token)",
    headers: [(name: String, value: String)] = [(name: "apns-topic", value: topic)], body: [UInt8] = payload,
    environment: APNsEnvironment = .development, oversize: PushSubmission.Oversize? = nil
) -> PushSubmission {
    PushSubmission(
        method: method, path: path[...], headers: headers, body: body, environment: environment, connectionID: 7,
        oversize: oversize)
}

func push(_ submission: PushSubmission = submission(), now: Int64 = 1_700_000_000_000) -> IntakePush {
    IntakePush(submission, now: now, monotonicNow: 42)
}

/// Authenticates every push as a provider token of team T/key K for the topic of its headers, or refuses with `refusal`.
struct FixedAuthenticator: PushAuthenticating {
    var refusal: APNsError?

    func authenticate(
        _ headers: PushHeaders, connection: Void, environment: APNsEnvironment, nowSeconds: Int64, monotonicNow: UInt64
    ) -> Result<AuthenticatedPush, APNsError> {
        if let refusal { return .failure(refusal) }
        return .success(AuthenticatedPush(
            authentication: .token(keyID: "K", teamID: "T", issuedAt: nowSeconds), topic: headers.topic ?? topic,
            bundleID: headers.topic ?? topic, teamID: "T"))
    }
}

/// Every record the push log got, and what the observer heard.
final class Recorder: PushRecordSink, IntakeObserver {
    private let state = Locked<(records: [PushRecord], authFailures: [APNsReason], faults: [String])>(([], [], []))

    func record(_ push: PushRecord) { state.withLock { $0.records.append(push) } }
    func authenticationFailed(_ reason: APNsReason) { state.withLock { $0.authFailures.append(reason) } }
    func faultApplied(_ action: FaultAction) { state.withLock { $0.faults.append(action.kind) } }

    var records: [PushRecord] { state.withLock { $0.records } }
    var authFailures: [APNsReason] { state.withLock { $0.authFailures } }
    var faults: [String] { state.withLock { $0.faults } }
}

/// A registry with one development device that has the app installed.
func registry(policy: DeviceRegistry.UnknownTokenPolicy = .autoRegister) -> DeviceRegistry {
    let registry = DeviceRegistry(unknownTokenPolicy: policy)
    registry.upsert(App(bundleID: topic, teamID: "T"))
    registry.upsert(Device(
        token: DeviceToken(hex: token)!, environment: .development,
        apps: [InstalledApp(bundleID: topic, installedAt: 1_600_000_000_000)]))
    return registry
}

func rule(_ action: FaultAction, latency: FaultLatency? = nil) -> FaultRule {
    FaultRule(id: "r1", name: "rule", action: action, latency: latency, seed: 1, createdAt: 0)
}

extension Result {
    var value: Success? { if case .success(let value) = self { value } else { nil } }
    var error: Failure? { if case .failure(let error) = self { error } else { nil } }
}
