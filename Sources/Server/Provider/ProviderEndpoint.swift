// APNs Sandbox — `POST /3/device/<token>` with Apple's full contract.
import APNsProtocol
import Foundation
import HTTP
import Sandbox
import Support
import Synchronization
import Transport

/// The APNs provider endpoint: validates, authenticates and resolves each push as APNs does, answers
/// with Apple's status, `reason` and headers, and hands a record of every push (accepted or not)
/// to the `PushRecordSink`.
///
/// Every response carries `apns-id` (the client's, lowercased, or a new one); responses in the
/// development environment also carry `apns-unique-id`. Errors are `{"reason":…}` with
/// `content-type: application/json`; 410 adds `timestamp` (ms).
/// Takes accepted pushes durably: `completion` runs once the push is committed, and only then is
/// the provider answered 200 (the delivery engine).
protocol AcceptedPushReceiver: Sendable {
    func accept(_ record: NotificationRecord, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
}

final class ProviderEndpoint: Sendable {
    let authenticator: ProviderAuthenticator
    let receiver: (any AcceptedPushReceiver)?
    let logger: Logger
    let registry: DeviceRegistry
    let sink: any PushRecordSink
    let settings: APNsSettings
    let listenerEnvironments: [String: APNsEnvironment]
    let defaultEnvironment: APNsEnvironment
    let rateLimiter: DeviceRateLimiter?
    /// Wall time of the records (`receivedAt`, the time-ordered `apns-id`) and monotonic time of tokens.
    let clock: any SandboxClock
    /// Fault rules, tried for every push that passes the path, header and authentication checks.
    let faults: FaultBook
    /// Real time, for a fault's latency (the sandbox clock may be frozen).
    let realTime: any SandboxClock
    /// Counts every answer (`apns_sandbox_pushes_total`), authentication failure and applied fault.
    let metrics: SandboxMetrics?
    /// While the stored devices load: a push to a token not loaded yet waits for its lookup (nil: never).
    let loader: RegistryLoader?

    init(
        keys: ProviderKeyStore, registry: DeviceRegistry, sink: any PushRecordSink, settings: APNsSettings,
        listenerEnvironments: [String: APNsEnvironment], receiver: (any AcceptedPushReceiver)? = nil,
        clock: any SandboxClock, faults: FaultBook = FaultBook(), realTime: (any SandboxClock)? = nil,
        metrics: SandboxMetrics? = nil, loader: RegistryLoader? = nil, logger: Logger = Logger(label: "provider")
    ) {
        self.metrics = metrics
        self.loader = loader
        self.faults = faults
        self.realTime = realTime ?? clock
        self.receiver = receiver
        self.logger = logger
        self.authenticator = ProviderAuthenticator(keys: keys, registry: registry, settings: settings, metrics: metrics)
        self.registry = registry
        self.sink = sink
        self.settings = settings
        self.listenerEnvironments = listenerEnvironments
        self.defaultEnvironment = settings.defaultEnvironment
        self.rateLimiter = settings.maxPushesPerSecondPerDevice > 0
            ? DeviceRateLimiter(maxPerSecond: settings.maxPushesPerSecondPerDevice) : nil
        self.clock = clock
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
                    let failure = APNsError(.internalServerError)
                    let apnsID = PushRequestValidator.echoedAPNsID(in: request.headers.fields.map { (name: $0.name, value: $0.value) })
                        ?? UUIDGenerator.makeTimeOrdered(unixMilliseconds: clock.nowMilliseconds)
                    respond(HTTPResponse(
                        status: failure.status, headers: ["apns-id": apnsID, "content-type": "application/json"],
                        body: failure.jsonBody))
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
        let (response, accepted, latency, tally, cause) = evaluate(request)
        guard let accepted, let receiver else {
            count(tally, request)
            if logger.level <= .debug { logPush(request, response, cause: cause) }
            guard latency > 0 else { return .response(response) }
            return .deferred { [self] respond in answer(response, after: latency, waiting(respond)) }
        }
        let logger = self.logger
        return .deferred { [self] respond in
            let respond = waiting(respond)
            receiver.accept(accepted) { result in
                switch result {
                case .success:
                    self.count(tally, request)
                    if logger.level <= .debug { self.logPush(request, response) }
                    self.answer(response, after: latency, respond)
                case .failure(let error):
                    logger.error("push not stored", [("apns.id", accepted.apnsID), ("error", "\(error)")])
                    let failure = APNsError(.internalServerError)
                    self.count(tally.map { PushTally(reason: failure.reason, pushType: $0.pushType, environment: $0.environment) }, request)
                    var headers = response.headers
                    headers.set("content-type", "application/json")
                    respond(HTTPResponse(status: failure.status, headers: headers, body: failure.jsonBody))
                }
            }
        }
    }

    /// One debug line per push: who sent what where, and APNs' answer (the device token shortened), with the
    /// cause of a refusal when there is one (``APNsError/cause``: why the token or certificate was refused).
    private func logPush(_ request: HTTPRequest, _ response: HTTPResponse, cause: String? = nil) {
        let reason = response.status == 200 ? "" : (try? JSON.parse(response.body))?.members?.first { $0.0 == "reason" }?.1.string ?? ""
        let token = request.path.split(separator: "/").last.map { String($0.prefix(8)) } ?? ""
        logger.debug("push", [
            ("apns.id", response.headers["apns-id"] ?? ""), ("device.token_prefix", token),
            ("apns.topic", request.headers["apns-topic"] ?? ""), ("apns.push_type", request.headers["apns-push-type"] ?? ""),
            ("http.status", "\(response.status)"), ("apns.reason", reason), ("conn.id", "\(request.connection.id)"),
        ] + (cause.map { [("apns.cause", $0)] } ?? []))
    }

    /// Answers a push whose body is over the transport limit: `PayloadTooLarge` (with the usual
    /// `apns-id`), after the path and headers are checked. Other paths get the generic answer.
    func answerOversized(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.path.hasPrefix("/3/") || request.path == "/3" else { return nil }
        let evaluation = evaluate(request, bodyTooLarge: true)
        count(evaluation.tally, request)
        return evaluation.response
    }

    /// Answers a push whose header section is over the transport's limits (HTTP/2
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`, 8000 bytes as APNs announces; HTTP/1.1 `maxHeaderBytes` /
    /// `maxHeaderCount`) in APNs' shape: Apple documents no reason for it, and the closest is
    /// `413 PayloadTooLarge` (the request is over a size limit; clients do not retry it unchanged), with
    /// the usual `apns-id`. Only the request line is checked first (`BadPath`, `MethodNotAllowed`,
    /// `MissingDeviceToken`): the header fields are incomplete. Other paths get the generic answer.
    func answerOversizedHeaders(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.path.hasPrefix("/3/") || request.path == "/3" else { return nil }
        let evaluation = evaluate(request, headersTooLarge: true)
        count(evaluation.tally, request)
        return evaluation.response
    }

    /// The response for a push, plus the notification to deliver when it is accepted, a fault's latency (ms),
    /// what the metrics count of the answer (nil when a connection fault drops the push) and the cause of a
    /// refusal (``APNsError/cause``).
    typealias Evaluation = (response: HTTPResponse, accepted: NotificationRecord?, latency: Int64, tally: PushTally?, cause: String?)

    func evaluate(_ request: HTTPRequest, bodyTooLarge: Bool = false, headersTooLarge: Bool = false) -> Evaluation {
        let nowMilliseconds = clock.nowMilliseconds
        let environment = environment(of: request)
        let headerList = request.headers.fields.map { (name: $0.name, value: $0.value) }
        var record = PushRecord(
            apnsID: "", deviceToken: "", environment: environment, headers: headerList, payload: request.body,
            authentication: .none, connectionID: request.connection.id, receivedAt: nowMilliseconds)
        record.loopIndex = request.connection.loopIndex

        var fault: FaultEffect?
        func reject(_ error: APNsError) -> Evaluation {
            if record.apnsID.isEmpty {
                record.apnsID = PushRequestValidator.echoedAPNsID(in: headerList)
                    ?? UUIDGenerator.makeTimeOrdered(unixMilliseconds: nowMilliseconds)
            }
            record.rejection = error
            var headers: HTTPFields = ["apns-id": record.apnsID, "content-type": "application/json"]
            if error.reason == .methodNotAllowed { headers.append("allow", "POST") }
            if environment == .development {
                record.uniqueID = UUIDGenerator.make()
                headers.append("apns-unique-id", record.uniqueID ?? "")
            }
            record.fault = fault?.applied
            sink.record(record)
            var response = HTTPResponse(status: error.status, headers: headers, body: error.jsonBody)
            response.connectionFault = fault?.connectionFault
            return (response, nil, fault?.latencyMilliseconds ?? 0,
                    PushTally(reason: error.reason, pushType: record.pushType, environment: environment), error.cause)
        }

        let token: DeviceToken
        switch PushRequestValidator.deviceToken(method: request.method, path: request.path) {
        case .success(let parsed): token = parsed
        case .failure(let error): return reject(error)
        }
        record.deviceToken = token.hex
        if headersTooLarge { return reject(APNsError(.payloadTooLarge)) }

        let headers: PushHeaders
        switch PushChecks.headers(headerList) {
        case .success(let parsed): headers = parsed
        case .failure(let error): return reject(error)
        }
        // A generated apns-id is time-ordered: the store's apns-id index then grows at its end (a
        // random id costs a random index page per push, about half the store's writes).
        record.apnsID = headers.apnsID ?? UUIDGenerator.makeTimeOrdered(unixMilliseconds: nowMilliseconds)
        if bodyTooLarge { return reject(APNsError(.payloadTooLarge)) }
        record.topic = headers.topic
        record.pushType = headers.pushType
        record.priority = headers.priority
        record.expiration = headers.expiration
        record.collapseID = headers.collapseID

        let authenticated: AuthenticatedPush
        switch authenticator.authenticate(
            headers: headers, connection: request.connection, environment: environment,
            nowSeconds: nowMilliseconds / 1000, monotonicNow: clock.monotonicNanoseconds)
        {
        case .success(let result): authenticated = result
        case .failure(let error):
            metrics?.pushes.countAuthFailure(error.reason)
            return reject(error)
        }
        record.authentication = authenticated.authentication
        record.topic = authenticated.topic
        record.bundleID = authenticated.bundleID

        fault = faultEffect(
            token: token, headers: headers, headerList: headerList, authenticated: authenticated,
            environment: environment, apnsID: record.apnsID, connectionID: request.connection.id, now: nowMilliseconds)
        if let fault {
            metrics?.faultApplied(fault.action)
            switch fault.action {
            case .reject(let reason, let timestamp):
                return reject(APNsError(reason, timestamp: timestamp ?? nowMilliseconds))
            case .goAway, .resetStream, .closeConnection:
                record.fault = fault.applied
                sink.record(record)
                var response = HTTPResponse(status: 500)
                response.connectionFault = fault.connectionFault
                return (response, nil, fault.latencyMilliseconds, nil, nil)
            default:
                break
            }
        }

        switch PushRequestValidator.payload(request.body, pushType: headers.pushType) {
        case .success: break
        case .failure(let error): return reject(error)
        }

        if let error = registry.resolve(token: token, environment: environment, bundleID: authenticated.bundleID, now: nowMilliseconds) {
            return reject(error)
        }

        if let rateLimiter, !rateLimiter.allow(token, nowMilliseconds: nowMilliseconds) {
            return reject(APNsError(.tooManyRequests))
        }

        if environment == .development { record.uniqueID = UUIDGenerator.make() }
        record.fault = fault?.applied
        sink.record(record)
        var responseHeaders: HTTPFields = ["apns-id": record.apnsID]
        if let uniqueID = record.uniqueID { responseHeaders.append("apns-unique-id", uniqueID) }
        var notification = receiver == nil ? nil : Self.notification(from: record, bundleID: authenticated.bundleID, topic: authenticated.topic)
        if let applied = fault?.applied { notification?.faults = [applied] }
        var response = HTTPResponse(status: 200, headers: responseHeaders)
        response.connectionFault = fault?.connectionFault
        return (response, notification, fault?.latencyMilliseconds ?? 0,
                PushTally(reason: nil, pushType: record.pushType, environment: environment), nil)
    }

    /// What the store keeps of an `authorization` header: provider tokens are credentials (valid for an
    /// hour) and are not written to disk; the record keeps the token's team, key and issue time instead.
    static let redactedAuthorization = "bearer <redacted>"

    /// The durable notification of an accepted push.
    static func notification(from record: PushRecord, bundleID: String, topic: String) -> NotificationRecord {
        var teamID: String?
        var keyID: String?
        var issuedAt: Int64?
        var authentication = "none"
        switch record.authentication {
        case .token(let key, let team, let iat):
            teamID = team
            keyID = key
            issuedAt = iat
            authentication = "token:\(team)/\(key)"
        case .certificate(let bundle):
            authentication = "certificate:\(bundle)"
        case .none:
            break
        }
        return NotificationRecord(
            apnsID: record.apnsID, uniqueID: record.uniqueID, deviceToken: record.deviceToken, bundleID: bundleID,
            topic: topic, pushType: record.pushType?.rawValue, priority: record.priority, expiration: record.expiration,
            collapseID: record.collapseID, environment: record.environment,
            headers: record.headers.map {
                HeaderField(name: $0.name, value: $0.name == "authorization" ? Self.redactedAuthorization : $0.value)
            },
            payload: String(decoding: record.payload, as: UTF8.self),
            authentication: authentication, teamID: teamID, keyID: keyID, issuedAt: issuedAt,
            connectionID: record.connectionID, receivedAt: record.receivedAt)
    }
}

/// Counts pushes per device token per second (APNs' `TooManyRequests`).
final class DeviceRateLimiter: Sendable {
    private struct Window {
        var second: Int64
        var count: Int
    }

    private let windows = Locked<[DeviceToken: Window]>([:])
    let maxPerSecond: Int

    init(maxPerSecond: Int) {
        self.maxPerSecond = maxPerSecond
    }

    func allow(_ token: DeviceToken, nowMilliseconds: Int64) -> Bool {
        let second = nowMilliseconds / 1000
        return windows.withLock { windows in
            if windows.count > 100_000 { windows = windows.filter { $0.value.second == second } }
            var window = windows[token] ?? Window(second: second, count: 0)
            if window.second != second { window = Window(second: second, count: 0) }
            window.count += 1
            windows[token] = window
            return window.count <= maxPerSecond
        }
    }

    /// Forgets the count of `token` (nil: of every device), as after a reset of the sandbox.
    func forget(_ token: DeviceToken?) {
        windows.withLock { windows in
            if let token { windows[token] = nil } else { windows.removeAll() }
        }
    }
}
