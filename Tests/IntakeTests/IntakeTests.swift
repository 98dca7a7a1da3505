// APNs Sandbox — the intake's stages run in order and end in a destination.
import APNsProtocol
import Intake
import Sandbox
import Support
import Testing

/// A receiver that commits, or fails, every push it takes.
final class Receiver: AcceptedPushReceiver {
    private let taken = Locked<[String]>([])
    let fails: Bool

    init(fails: Bool = false) { self.fails = fails }

    func accept(_ record: NotificationRecord, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        taken.withLock { $0.append(record.apnsID) }
        completion(fails ? .failure(FixedError()) : .success(()))
    }

    var apnsIDs: [String] { taken.withLock { $0 } }
}

struct FixedError: Error {}

/// Where a `run` completion leaves its answer.
final class AnswerBox: Sendable {
    private let answer = Locked<PushAnswer?>(nil)
    func set(_ value: PushAnswer) { answer.withLock { $0 = value } }
    var value: PushAnswer? { answer.withLock { $0 } }
}

@Suite struct IntakeTests {
    private func intake(
        _ recorder: Recorder, refusal: APNsError? = nil, rules: [FaultRule] = [], registry: DeviceRegistry = registry()
    ) -> Intake<FixedAuthenticator> {
        Intake(
            authenticator: FixedAuthenticator(refusal: refusal), registry: registry, faults: FaultBook(rules: rules),
            maxPushesPerSecondPerDevice: 1, sink: recorder, clock: ManualClock(), observer: recorder)
    }

    private func run(_ intake: Intake<FixedAuthenticator>, _ destination: some PushDestination, _ submission: PushSubmission = submission()) -> PushAnswer? {
        let box = AnswerBox()
        intake.run(submission, connection: (), to: destination, completion: box.set)
        return box.value
    }

    /// Deliver: an accepted push goes to the receiver and is answered 200 with its ids; the push log has it.
    @Test func deliverTakesAcceptedPushes() throws {
        let recorder = Recorder()
        let receiver = Receiver()
        let answer = try #require(run(intake(recorder), Deliver(receiver: receiver, logger: Logger(label: "test"))))
        #expect(answer.status == 200 && answer.error == nil && answer.uniqueID != nil)
        #expect(receiver.apnsIDs == [answer.apnsID])
        #expect(recorder.records.map(\.apnsID) == [answer.apnsID])
    }

    /// Deliver: a push the receiver could not store is 500 `InternalServerError`, without its fault's effects, with
    /// its ids; the push log has it as the stages accepted it.
    @Test func deliverAnswersAFailedCommit() throws {
        let recorder = Recorder()
        let intake = intake(recorder, rules: [rule(.stall(milliseconds: 100))])
        let answer = try #require(run(intake, Deliver(receiver: Receiver(fails: true), logger: Logger(label: "test"))))
        #expect(answer.error?.reason == .internalServerError && answer.fault == nil)
        let record = try #require(recorder.records.first)
        #expect(answer.apnsID == record.apnsID && answer.uniqueID == record.uniqueID && answer.uniqueID != nil)
        #expect(record.rejection == nil && record.fault?.action == "stall")
    }

    /// The later stages keep Apple's order too: a fault rule's refusal comes before the payload's, the payload's
    /// before the device's; a refused push is not rate-counted.
    @Test func laterStagesKeepTheirOrder() throws {
        let destination = Deliver(receiver: Receiver(), logger: Logger(label: "test"))
        let faulty = intake(Recorder(), rules: [rule(.reject(.shutdown, timestamp: nil))])
        #expect(run(faulty, destination, submission(body: []))?.error?.reason == .shutdown)
        let strict = intake(Recorder(), registry: registry(policy: .strict))
        let unknown = "/3/device/" + String(repeating: "cd", count: 32)
        #expect(run(strict, destination, submission(path: unknown, body: []))?.error?.reason == .payloadEmpty)
        #expect(run(strict, destination, submission(path: unknown))?.error?.reason == .badDeviceToken)
        // The limit is 1 a second: the refused pushes above did not use it up.
        #expect(run(strict, destination)?.status == 200)
    }

    /// The first stage that refuses decides, in Apple's order: the path before the headers before authentication.
    @Test func firstRefusalWins() throws {
        let recorder = Recorder()
        let destination = Deliver(receiver: Receiver(), logger: Logger(label: "test"))
        let intake = intake(recorder, refusal: APNsError(.invalidProviderToken))
        let badPathAndHeaders = submission(
            path: "/3/device/", headers: [(name: "apns-priority", value: "7")])
        #expect(run(intake, destination, badPathAndHeaders)?.error?.reason == .missingDeviceToken)
        #expect(run(intake, destination, submission(headers: [(name: "apns-priority", value: "7")]))?.error?.reason == .badPriority)
        #expect(run(intake, destination)?.error?.reason == .invalidProviderToken)
        #expect(recorder.records.count == 3 && recorder.records.allSatisfy { $0.rejection != nil })
    }

    /// A dropped push (GOAWAY, RST_STREAM, close) gets no answer to count, and is recorded with its fault, neither
    /// refused nor given an `apns-unique-id`.
    @Test(arguments: [FaultAction.goAway(reason: "Shutdown", errorCode: 0), .resetStream(errorCode: 7), .closeConnection])
    func droppedPushIsRecordedNotAnswered(_ action: FaultAction) throws {
        let recorder = Recorder()
        let receiver = Receiver()
        let intake = intake(recorder, rules: [rule(action)])
        let answer = try #require(run(intake, Deliver(receiver: receiver, logger: Logger(label: "test"))))
        #expect(answer.isDropped && receiver.apnsIDs.isEmpty)
        let record = try #require(recorder.records.first)
        #expect(record.fault?.action == action.kind && record.rejection == nil && record.uniqueID == nil)
        #expect(recorder.faults == [action.kind])
    }

    /// Validate: the same stages as a dry run — no fault rule, no rate counting, no registration, no record, and
    /// the verdict APNs would give.
    @Test func validateChangesNothing() throws {
        let recorder = Recorder()
        let registry = registry()
        let intake = intake(recorder, rules: [rule(.reject(.shutdown, timestamp: nil))], registry: registry)
        for _ in 0..<3 { #expect(run(intake, Validate())?.status == 200) }
        let unknown = String(repeating: "cd", count: 32)
        #expect(run(intake, Validate(), submission(path: "/3/device/\(unknown)"))?.status == 200)
        #expect(registry.device(token: DeviceToken(hex: unknown)!) == nil)
        #expect(recorder.records.isEmpty && recorder.faults.isEmpty)
        let verdict = intake.evaluate(submission(body: []), connection: (), for: Validate())
        #expect(verdict.answer.error?.reason == .payloadEmpty && verdict.accepted == nil && verdict.headers?.topic == topic)
        // Nor does a dry run count a refused authentication.
        let refusing = self.intake(recorder, refusal: APNsError(.missingTopic))
        #expect(run(refusing, Validate())?.error?.reason == .missingTopic)
        #expect(recorder.authFailures.isEmpty && recorder.records.isEmpty)
    }

    /// The rate limit counts sent pushes only: the second push in a second is `TooManyRequests`.
    @Test func rateLimitCountsSentPushes() {
        let recorder = Recorder()
        let intake = intake(recorder)
        let destination = Deliver(receiver: Receiver(), logger: Logger(label: "test"))
        #expect(run(intake, destination)?.status == 200)
        #expect(run(intake, destination)?.error?.reason == .tooManyRequests)
    }
}
