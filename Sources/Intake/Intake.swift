// APNs Sandbox — the push intake: APNs' checks on one push as a pipeline of stages, ending in a destination.
import APNsProtocol
import Sandbox

/// Takes one push as APNs does, whatever face received it: eight stages in Apple's order, each a small type with
/// one job — the request line (``DeviceTokenStage``), the headers (``HeaderStage``), authentication
/// (``AuthenticationStage``), fault rules (``FaultStage``), the payload (``PayloadStage``), the device
/// (``ResolveStage``), the rate limit (``RateLimitStage``) and the push log (``RecordStage``) — then a
/// ``PushDestination`` that takes the accepted push and gives the answer (``Deliver``: to the simulated devices;
/// ``Validate``: nowhere, a dry run).
///
/// The first stage that refuses decides the answer (its APNs reason). A destination that does not send
/// (``PushDestination/sends``) runs the stages without their effects: no fault rule, no rate counting, no
/// auto-registration, no record.
///
/// Threading: safe from any thread; no stage blocks (the registry, fault book and rate limiter take a short lock).
public struct Intake<Authenticator: PushAuthenticating>: Sendable {
    /// What the stages made of a push.
    public struct Verdict: Sendable {
        /// The answer as the stages left it: 200 when every stage passed (the destination may still change it), the
        /// refusing stage's reason, or a dropped push (``PushAnswer/isDropped``).
        public var answer: PushAnswer
        /// The notification of a push every stage passed; nil when refused or dropped.
        public var accepted: NotificationRecord?
        /// The push's headers, when they were valid.
        public var headers: PushHeaders?
    }

    public let tokens = DeviceTokenStage()
    public let headers = HeaderStage()
    public let authentication: AuthenticationStage<Authenticator>
    public let faults: FaultStage?
    public let payload = PayloadStage()
    public let resolve: ResolveStage
    public let rateLimit: RateLimitStage
    public let record: RecordStage?
    public let clock: any SandboxClock
    public let observer: (any IntakeObserver)?

    /// - Parameters:
    ///   - faults: The fault rules (nil: none).
    ///   - maxPushesPerSecondPerDevice: `TooManyRequests` past this many pushes a second to one device (0: no limit).
    ///   - sink: Where the push log's records go (nil: nowhere, as for a dry run).
    ///   - clock: The sandbox's clock: the push's arrival, provider-token ages.
    ///   - observer: Told about refused authentications and applied faults (the metrics).
    public init(
        authenticator: Authenticator, registry: any DeviceDirectory, faults: (any FaultDecider)? = nil,
        maxPushesPerSecondPerDevice: Int = 0, sink: (any PushRecordSink)? = nil, clock: any SandboxClock,
        observer: (any IntakeObserver)? = nil
    ) {
        authentication = AuthenticationStage(authenticator)
        self.faults = faults.map { FaultStage($0) }
        resolve = ResolveStage(registry)
        rateLimit = RateLimitStage(maxPerSecond: maxPushesPerSecondPerDevice)
        record = sink.map(RecordStage.init)
        self.clock = clock
        self.observer = observer
    }

    /// Runs the stages on `submission` for `destination` (which decides whether their effects apply).
    /// - Parameter lookUp: While the stored devices load: fills the registry with the device's stored record before
    ///   the device stage (false: the store cannot be read, `InternalServerError`).
    public func evaluate<Destination: PushDestination>(
        _ submission: PushSubmission, connection: Authenticator.Connection, for destination: Destination,
        lookUp: ((DeviceToken) -> Bool)? = nil
    ) -> Verdict {
        let sends = destination.sends
        var push = IntakePush(submission, now: clock.nowMilliseconds, monotonicNow: clock.monotonicNanoseconds)
        if let error = tokens.run(&push) ?? headers.run(&push)
            ?? authentication.run(&push, connection: connection, observer: sends ? observer : nil)
        {
            return refuse(&push, error, sends: sends)
        }
        if sends, let faults {
            switch faults.run(&push, observer: observer) {
            case .proceed: break
            case .refuse(let error): return refuse(&push, error, sends: sends)
            case .drop:
                record?.dropped(&push)
                return Verdict(answer: answer(push), accepted: nil, headers: push.headers)
            }
        }
        if let error = payload.run(&push) ?? resolve.run(&push, registering: sends, lookUp: lookUp)
            ?? (sends ? rateLimit.run(&push) : nil)
        {
            return refuse(&push, error, sends: sends)
        }
        let notification: NotificationRecord
        if sends, let record {
            notification = record.accepted(&push)
        } else {
            notification = RecordStage.notification(
                from: push.record, bundleID: push.authenticated?.bundleID ?? "", topic: push.authenticated?.topic ?? "")
        }
        return Verdict(answer: answer(push), accepted: notification, headers: push.headers)
    }

    /// Runs the stages and hands an accepted push to `destination`; `completion` gets the answer (at once for a
    /// refused push and for a destination that answers at once).
    public func run<Destination: PushDestination>(
        _ submission: PushSubmission, connection: Authenticator.Connection, to destination: Destination,
        lookUp: ((DeviceToken) -> Bool)? = nil, completion: @escaping @Sendable (PushAnswer) -> Void
    ) {
        let verdict = evaluate(submission, connection: connection, for: destination, lookUp: lookUp)
        guard let accepted = verdict.accepted else { return completion(verdict.answer) }
        destination.take(accepted, answer: verdict.answer, completion: completion)
    }

    private func refuse(_ push: inout IntakePush, _ error: APNsError, sends: Bool) -> Verdict {
        if sends, let record {
            record.refused(&push, error)
        } else {
            push.ensureAPNsID()
            push.record.rejection = error
        }
        return Verdict(answer: answer(push), accepted: nil, headers: push.headers)
    }

    private func answer(_ push: IntakePush) -> PushAnswer {
        PushAnswer(
            error: push.record.rejection, apnsID: push.record.apnsID, uniqueID: push.record.uniqueID, fault: push.fault,
            pushType: push.record.pushType, environment: push.record.environment)
    }
}
