// APNs Sandbox — `POST /api/v1/pushes/validate`: the provider endpoint's verdict on a push, without sending it.
import APNsProtocol
import HTTP
import Intake
import Sandbox

/// The push ``Intake`` with the ``Validate`` destination: the stages `POST /3/device/<token>` runs, in its order,
/// minus authentication and anything that changes state (no record, no event, no rate counting, no fault rules,
/// no auto-registration): path and device token, headers, the topic as on a token connection (`MissingTopic`), an
/// unknown app without `apns.autoRegisterApps` (`TopicDisallowed`) (``TopicCheck``), the payload, then the device
/// (``DeviceRegistry/check(token:environment:bundleID:now:)``: unknown-token policy, environment,
/// `DeviceTokenNotForTopic`, `Unregistered`). Cheap: no I/O, one lock — but while the stored devices load it runs
/// on a worker, where a token not loaded yet is looked up in the store.
struct PushValidationRoutes: Sendable {
    struct Request: APIRequestBody {
        static let fields = ["deviceToken", "headers", "payload", "environment"]
        var deviceToken: String?
        var headers: [String: String]?
        var payload: String?
        var environment: String?
    }

    struct Verdict: Encodable {
        var valid: Bool
        var status: Int
        var reason: String?
        var message: String
        var pushType: String
        var priority: Int
        var payloadBytes: Int
        var maxPayloadBytes: Int

        enum CodingKeys: String, CodingKey {
            case valid, status, reason, message, pushType, priority, payloadBytes, maxPayloadBytes
        }

        /// `reason` is `null` (not left out) when the push is valid.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(valid, forKey: .valid)
            try container.encode(status, forKey: .status)
            if let reason { try container.encode(reason, forKey: .reason) } else { try container.encodeNil(forKey: .reason) }
            try container.encode(message, forKey: .message)
            try container.encode(pushType, forKey: .pushType)
            try container.encode(priority, forKey: .priority)
            try container.encode(payloadBytes, forKey: .payloadBytes)
            try container.encode(maxPayloadBytes, forKey: .maxPayloadBytes)
        }
    }

    let registry: DeviceRegistry
    let settings: APNsSettings
    let intake: Intake<TopicCheck>
    /// While the stored devices load (nil: never).
    let loader: RegistryLoader?

    init(registry: DeviceRegistry, settings: APNsSettings, clock: any SandboxClock, loader: RegistryLoader? = nil) {
        self.registry = registry
        self.settings = settings
        self.loader = loader
        intake = Intake(
            authenticator: TopicCheck(registry: registry, autoRegistersApps: settings.autoRegisterApps),
            registry: registry, clock: clock)
    }

    func register(on router: inout Router) {
        router.post("/api/v1/pushes/validate") { [self] request, _ in
            guard registry.isLoading else { return .response(try .json(encoding: validate(body: request.body))) }
            return .blocking { [self] in try .json(encoding: validate(body: request.body, looksUp: true)) }
        }
    }

    /// - Parameter looksUp: Whether a token the registry has not loaded yet is looked up in the store first
    ///   (blocking: only on a worker thread).
    func validate(body: [UInt8], looksUp: Bool = false) throws -> Verdict {
        guard let request = try APIBody.decode(Request.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        guard let deviceToken = request.deviceToken else {
            throw APIError(status: 400, code: "missing_field", message: "Field deviceToken is required")
        }
        guard let payload = request.payload else {
            throw APIError(status: 400, code: "missing_field", message: "Field payload is required (the raw payload text)")
        }
        let environment = try request.environment.map(APIBody.environment) ?? settings.defaultEnvironment
        let headerList = (request.headers ?? [:]).sorted { $0.key < $1.key }.map { (name: $0.key.lowercased(), value: $0.value) }
        let bytes = Array(payload.utf8)
        let submission = PushSubmission(deviceToken: deviceToken, headers: headerList, body: bytes, environment: environment)
        let lookUp: ((DeviceToken) -> Bool)? = looksUp ? loader.map { loader in { loader.fillNow($0) } } : nil
        let outcome = intake.evaluate(submission, connection: (), for: Validate(), lookUp: lookUp)
        let pushType = outcome.headers?.pushType ?? .alert
        var verdict = Verdict(
            valid: true, status: 200, reason: nil, message: "APNs would accept this push", pushType: pushType.rawValue,
            priority: outcome.headers?.priority ?? 10, payloadBytes: bytes.count, maxPayloadBytes: pushType.maxPayloadBytes)
        if let error = outcome.answer.error {
            verdict.valid = false
            verdict.status = error.status
            verdict.reason = error.reason.rawValue
            verdict.message = Self.message(error.reason)
        }
        return verdict
    }

    /// Human words for a reason, for the form's hint under the field.
    static func message(_ reason: APNsReason) -> String {
        switch reason {
        case .badDeviceToken: "The device token is not 32–400 hex digits, or no such device in this environment"
        case .missingDeviceToken: "The device token is empty"
        case .badPath: "The device token contains a /"
        case .missingTopic: "apns-topic is required"
        case .badTopic: "apns-topic does not fit the push type (e.g. .voip, .complication, .push-type.liveactivity)"
        case .topicDisallowed: "The topic is not an app the sandbox knows (apns.autoRegisterApps is off)"
        case .invalidPushType: "apns-push-type is not a push type APNs knows"
        case .badPriority: "apns-priority must be 1, 5 or 10 (background: not 10; liveactivity: not 1)"
        case .badExpirationDate: "apns-expiration must be a UNIX time in seconds"
        case .badCollapseId: "apns-collapse-id is longer than 64 bytes"
        case .badMessageId: "apns-id is not a UUID"
        case .duplicateHeaders: "A header appears twice"
        case .payloadEmpty: "The payload is empty"
        case .payloadTooLarge: "The payload is over the push type's limit"
        case .badPayload: "The payload is not a JSON object with an aps dictionary"
        case .deviceTokenNotForTopic: "The app of this topic is not installed on the device"
        case .unregistered: "The app was uninstalled from the device"
        default: "APNs would answer \(reason.status) \(reason.rawValue)"
        }
    }
}
