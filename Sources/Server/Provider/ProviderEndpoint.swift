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
final class ProviderEndpoint: Sendable {
    let authenticator: ProviderAuthenticator
    let registry: DeviceRegistry
    let sink: any PushRecordSink
    let settings: APNsSettings
    let listenerEnvironments: [String: APNsEnvironment]
    let defaultEnvironment: APNsEnvironment
    let rateLimiter: DeviceRateLimiter?
    let wallClockMilliseconds: @Sendable () -> Int64

    init(
        keys: ProviderKeyStore, registry: DeviceRegistry, sink: any PushRecordSink, settings: APNsSettings,
        listenerEnvironments: [String: APNsEnvironment],
        wallClockMilliseconds: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) {
        self.authenticator = ProviderAuthenticator(keys: keys, registry: registry, settings: settings)
        self.registry = registry
        self.sink = sink
        self.settings = settings
        self.listenerEnvironments = listenerEnvironments
        self.defaultEnvironment = APNsEnvironment(rawValue: settings.defaultEnvironment) ?? .development
        self.rateLimiter = settings.maxPushesPerSecondPerDevice > 0
            ? DeviceRateLimiter(maxPerSecond: settings.maxPushesPerSecondPerDevice) : nil
        self.wallClockMilliseconds = wallClockMilliseconds
    }

    func register(on router: inout Router) {
        // Every method and any path under /3/device reaches the handler so that APNs' own
        // MethodNotAllowed / BadPath / MissingDeviceToken answers are given, not the router's.
        router.any("/3/{rest...}") { [self] request, _ in .response(self.handle(request)) }
        router.any("/3") { [self] request, _ in .response(self.handle(request)) }
    }

    /// The environment a request addresses: Apple's host names decide, else the listener's default.
    func environment(of request: HTTPRequest) -> APNsEnvironment {
        if let authority = request.authority, let environment = APNsEnvironment(host: authority) { return environment }
        return listenerEnvironments[request.connection.listenerName] ?? defaultEnvironment
    }

    /// Answers a push whose body is over the transport limit: `PayloadTooLarge` (with the usual
    /// `apns-id`), after the path and headers are checked. Other paths get the generic answer.
    func answerOversized(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.path.hasPrefix("/3/") || request.path == "/3" else { return nil }
        return handle(request, bodyTooLarge: true)
    }

    func handle(_ request: HTTPRequest, bodyTooLarge: Bool = false) -> HTTPResponse {
        let nowMilliseconds = wallClockMilliseconds()
        let environment = environment(of: request)
        let headerList = request.headers.fields.map { (name: $0.name, value: $0.value) }
        var record = PushRecord(
            apnsID: "", deviceToken: "", environment: environment, headers: headerList, payload: request.body,
            authentication: .none, connectionID: request.connection.id, receivedAt: nowMilliseconds)
        record.loopIndex = request.connection.loopIndex

        func reject(_ error: APNsError) -> HTTPResponse {
            if record.apnsID.isEmpty {
                record.apnsID = PushRequestValidator.echoedAPNsID(in: headerList) ?? UUIDGenerator.make()
            }
            record.rejection = error
            var headers: HTTPFields = ["apns-id": record.apnsID, "content-type": "application/json"]
            if error.reason == .methodNotAllowed { headers.append("allow", "POST") }
            if environment == .development {
                record.uniqueID = UUIDGenerator.make()
                headers.append("apns-unique-id", record.uniqueID ?? "")
            }
            sink.record(record)
            return HTTPResponse(status: error.status, headers: headers, body: error.jsonBody)
        }

        let token: DeviceToken
        switch PushRequestValidator.deviceToken(method: request.method, path: request.path) {
        case .success(let parsed): token = parsed
        case .failure(let error): return reject(error)
        }
        record.deviceToken = token.hex

        var headers: PushHeaders
        switch PushRequestValidator.headers(headerList) {
        case .success(let parsed): headers = parsed
        case .failure(let error): return reject(error)
        }
        // APNs defaults the priority to 10, which background pushes may not use; clients that
        // leave the header out of background pushes mean the only valid value, 5.
        if headers.pushType == .background, !headerList.contains(where: { $0.name == "apns-priority" }) {
            headers.priority = 5
        }
        record.apnsID = headers.apnsID ?? UUIDGenerator.make()
        if bodyTooLarge { return reject(APNsError(.payloadTooLarge)) }
        record.topic = headers.topic
        record.pushType = headers.pushType
        record.priority = headers.priority
        record.expiration = headers.expiration
        record.collapseID = headers.collapseID

        let authenticated: AuthenticatedPush
        switch authenticator.authenticate(
            headers: headers, connection: request.connection, environment: environment,
            nowSeconds: nowMilliseconds / 1000, monotonicNow: MonotonicClock.nanoseconds())
        {
        case .success(let result): authenticated = result
        case .failure(let error): return reject(error)
        }
        record.authentication = authenticated.authentication
        record.topic = authenticated.topic
        record.bundleID = authenticated.bundleID

        switch PushRequestValidator.payload(request.body, pushType: headers.pushType) {
        case .success: break
        case .failure(let error): return reject(error)
        }

        switch registry.resolve(token: token, environment: environment, bundleID: authenticated.bundleID, now: nowMilliseconds) {
        case .success: break
        case .failure(let error): return reject(error)
        }

        if let rateLimiter, !rateLimiter.allow(token, nowMilliseconds: nowMilliseconds) {
            return reject(APNsError(.tooManyRequests))
        }

        if environment == .development { record.uniqueID = UUIDGenerator.make() }
        sink.record(record)
        var responseHeaders: HTTPFields = ["apns-id": record.apnsID]
        if let uniqueID = record.uniqueID { responseHeaders.append("apns-unique-id", uniqueID) }
        return HTTPResponse(status: 200, headers: responseHeaders)
    }
}

/// Counts pushes per device token per second (APNs' `TooManyRequests`).
final class DeviceRateLimiter: Sendable {
    private struct Window {
        var second: Int64
        var count: Int
    }

    private let windows = Mutex<[DeviceToken: Window]>([:])
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
}
