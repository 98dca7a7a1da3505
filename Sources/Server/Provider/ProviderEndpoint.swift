// APNs Sandbox — `POST /3/device/<token>` with Apple's full contract.
import APNsProtocol
import HTTP
import Intake
import Sandbox
import Support
import Synchronization
import Transport

/// The APNs provider endpoint: the HTTP face of the push ``Intake``. It turns each request into a
/// ``PushSubmission``, runs the intake's stages (Apple's checks, authentication, faults, the device) and its
/// ``Deliver`` destination, and writes the ``PushAnswer`` with Apple's status, `reason` and headers.
///
/// Every response carries `apns-id` (the client's, lowercased, or a new one); responses in the
/// development environment also carry `apns-unique-id`. Errors are `{"reason":…}` with
/// `content-type: application/json`; 410 adds `timestamp` (ms). An accepted push is answered 200 only once the
/// delivery engine committed it.
final class ProviderEndpoint: Sendable {
    let intake: Intake<ProviderAuthenticator>
    /// Where accepted pushes go (nil: answered 200 without going anywhere, for tests of the checks alone).
    let deliver: Deliver?
    let logger: Logger
    let registry: DeviceRegistry
    let listenerEnvironments: [String: APNsEnvironment]
    let defaultEnvironment: APNsEnvironment
    let clock: any SandboxClock
    /// Real time, for a fault's latency (the sandbox clock may be frozen).
    let realTime: any SandboxClock
    /// Counts every answer (`apns_sandbox_pushes_total`), authentication failure and applied fault.
    let metrics: SandboxMetrics?
    /// While the stored devices load: a push to a token not loaded yet waits for its lookup (nil: never).
    let loader: RegistryLoader?

    /// Provider tokens and client certificates, per connection (also `POST /api/v1/provider-tokens/validate`'s).
    var authenticator: ProviderAuthenticator { intake.authentication.authenticator }

    /// The per-device `TooManyRequests` counts (nil: no limit), which a reset forgets.
    var rateLimiter: (any PushRateLimiter)? { intake.rateLimit.limiter }

    init(
        keys: ProviderKeyStore, registry: DeviceRegistry, sink: any PushRecordSink, settings: APNsSettings,
        listenerEnvironments: [String: APNsEnvironment], receiver: (any AcceptedPushReceiver)? = nil,
        clock: any SandboxClock, faults: FaultBook = FaultBook(), realTime: (any SandboxClock)? = nil,
        metrics: SandboxMetrics? = nil, loader: RegistryLoader? = nil, logger: Logger = Logger(label: "provider")
    ) {
        self.metrics = metrics
        self.loader = loader
        self.realTime = realTime ?? clock
        self.logger = logger
        self.registry = registry
        self.listenerEnvironments = listenerEnvironments
        self.defaultEnvironment = settings.defaultEnvironment
        self.clock = clock
        intake = Intake(
            authenticator: ProviderAuthenticator(keys: keys, registry: registry, settings: settings, metrics: metrics),
            registry: registry, faults: faults, maxPushesPerSecondPerDevice: settings.maxPushesPerSecondPerDevice,
            sink: sink, clock: clock, observer: metrics)
        deliver = receiver.map { Deliver(receiver: $0, logger: logger) }
    }

    func register(on router: inout Router) {
        // Every method and any path under /3/device reaches the handler so that APNs' own
        // MethodNotAllowed / BadPath / MissingDeviceToken answers are given, not the router's.
        router.any("/3/{rest...}") { [self] request, _ in self.respond(to: request) }
        router.any("/3") { [self] request, _ in self.respond(to: request) }
    }

    /// The environment a request addresses: Apple's host names decide, else the listener's default.
    func environment(of request: HTTPRequest) -> APNsEnvironment {
        if let authority = request.authority, let environment = APNsEnvironment(host: authority) { return environment }
        return listenerEnvironments[request.connection.listenerName] ?? defaultEnvironment
    }

    /// Validates the push; an accepted one is answered 200 once the receiver has committed it. While the stored
    /// devices load, a push to a token not loaded yet is answered after its lookup in the store (500
    /// `InternalServerError` when the store cannot be read).
    func respond(to request: HTTPRequest) -> HandlerResult {
        guard let loader, registry.isLoading,
            case .success(let token) = PushRequestValidator.deviceToken(method: request.method, path: request.path),
            loader.mustWait(token)
        else { return respondKnowing(request) }
        return .deferred { [self] respond in
            loader.fill(token) { [self] filled in
                guard filled else {
                    let apnsID = PushRequestValidator.echoedAPNsID(in: request.headers.fields.map { (name: $0.name, value: $0.value) })
                        ?? UUIDGenerator.makeTimeOrdered(unixMilliseconds: clock.nowMilliseconds)
                    respond(Self.response(PushAnswer(
                        error: APNsError(.internalServerError), apnsID: apnsID, environment: environment(of: request))))
                    return
                }
                switch respondKnowing(request) {
                case .response(let response): respond(response)
                case .deferred(let answer): answer(respond)
                case .stream, .blocking: preconditionFailure("the provider endpoint answers at once or deferred")
                }
            }
        }
    }

    /// ``respond(to:)`` once the registry can answer for the push's device.
    private func respondKnowing(_ request: HTTPRequest) -> HandlerResult {
        let verdict = evaluate(request)
        let latency = verdict.answer.fault?.latencyMilliseconds ?? 0
        guard let accepted = verdict.accepted, let deliver else {
            finished(verdict.answer, request)
            let response = Self.response(verdict.answer)
            guard latency > 0 else { return .response(response) }
            return .deferred { [self] respond in answer(response, after: latency, waiting(respond)) }
        }
        return .deferred { [self] respond in
            let respond = waiting(respond)
            deliver.take(accepted, answer: verdict.answer) { answer in
                self.finished(answer, request)
                // A push that could not be stored is answered at once, without the fault's effects.
                self.answer(Self.response(answer), after: answer.error == nil ? latency : 0, respond)
            }
        }
    }

    /// Counts an answer given to `request` (a dropped push has none to count) and logs it.
    private func finished(_ answer: PushAnswer, _ request: HTTPRequest) {
        if !answer.isDropped { count(answer, request) }
        if logger.level <= .debug { logPush(request, answer) }
    }

    /// One debug line per push: who sent what where, and APNs' answer (the device token shortened), with the
    /// cause of a refusal when there is one (``APNsError/cause``: why the token or certificate was refused).
    private func logPush(_ request: HTTPRequest, _ answer: PushAnswer) {
        let token = request.path.split(separator: "/").last.map { String($0.prefix(8)) } ?? ""
        logger.debug("push", [
            ("apns.id", answer.apnsID), ("device.token_prefix", token),
            ("apns.topic", request.headers["apns-topic"] ?? ""), ("apns.push_type", request.headers["apns-push-type"] ?? ""),
            ("http.status", answer.isDropped ? "none (\(answer.fault?.action.kind ?? "dropped"))" : "\(answer.status)"),
            ("apns.reason", answer.error?.reason.rawValue ?? ""),
            ("conn.id", "\(request.connection.id)"),
        ] + (answer.error?.cause.map { [("apns.cause", $0)] } ?? []))
    }

    /// Answers a push whose body is over the transport limit: `PayloadTooLarge` (with the usual
    /// `apns-id`), after the path and headers are checked. Other paths get the generic answer.
    func answerOversized(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.path.hasPrefix("/3/") || request.path == "/3" else { return nil }
        let answer = evaluate(request, oversize: .body).answer
        finished(answer, request)
        return Self.response(answer)
    }

    /// Answers a push whose header section is over the transport's limits (HTTP/2
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`, 8000 bytes as APNs announces; HTTP/1.1 `maxHeaderBytes` /
    /// `maxHeaderCount`) in APNs' shape: Apple documents no reason for it, and the closest is
    /// `413 PayloadTooLarge` (the request is over a size limit; clients do not retry it unchanged), with
    /// the usual `apns-id`. Only the request line is checked first (`BadPath`, `MethodNotAllowed`,
    /// `MissingDeviceToken`): the header fields are incomplete. Other paths get the generic answer.
    func answerOversizedHeaders(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.path.hasPrefix("/3/") || request.path == "/3" else { return nil }
        let answer = evaluate(request, oversize: .headers).answer
        finished(answer, request)
        return Self.response(answer)
    }

    /// Runs the intake's stages on `request` (as a push to the devices: their effects apply).
    func evaluate(_ request: HTTPRequest, oversize: PushSubmission.Oversize? = nil) -> Intake<ProviderAuthenticator>.Verdict {
        let submission = PushSubmission(
            method: request.method, path: request.path,
            headers: request.headers.fields.map { (name: $0.name, value: $0.value) }, body: request.body,
            environment: environment(of: request), connectionID: request.connection.id,
            loopIndex: request.connection.loopIndex, oversize: oversize)
        guard let deliver else { return intake.evaluate(submission, connection: request.connection, for: Unreceived()) }
        return intake.evaluate(submission, connection: request.connection, for: deliver)
    }

    /// The HTTP response of an answer: `apns-id` (and `apns-unique-id`) always; an error's `{"reason":…}` as JSON
    /// (`allow: POST` with `MethodNotAllowed`); the fault's connection effect. A dropped push's status is never sent.
    static func response(_ answer: PushAnswer) -> HTTPResponse {
        var headers: HTTPFields = ["apns-id": answer.apnsID]
        var body: [UInt8] = []
        if let error = answer.error {
            headers.append("content-type", "application/json")
            if error.reason == .methodNotAllowed { headers.append("allow", "POST") }
            body = error.jsonBody
        }
        if let uniqueID = answer.uniqueID { headers.append("apns-unique-id", uniqueID) }
        var response = HTTPResponse(status: answer.isDropped ? 500 : answer.status, headers: headers, body: body)
        response.connectionFault = answer.fault?.connectionFault
        return response
    }
}

/// The destination of an endpoint without a receiver (tests of the checks alone): pushes are sent (their effects
/// apply) and answered 200 at once.
private struct Unreceived: PushDestination {
    var sends: Bool { true }

    func take(_ notification: NotificationRecord, answer: PushAnswer, completion: @escaping @Sendable (PushAnswer) -> Void) {
        completion(answer)
    }
}
