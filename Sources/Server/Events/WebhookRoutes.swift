// APNs Sandbox — `/api/v1/webhooks`: subscriptions, their delivery log, replay and test messages.
import APNsProtocol
import Events
import Foundation
import HTTP
import Sandbox
import Webhooks

/// - `GET /api/v1/webhooks`, `POST /api/v1/webhooks` (`url`, `events`, `devices`, `topics`, `secret`,
///   `description`, `maxConcurrentDeliveries`), `GET|DELETE /api/v1/webhooks/{id}`
/// - `GET /api/v1/webhooks/{id}/deliveries?status=&limit=&before=`: the delivery log, newest first
/// - `POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/replay`, `POST /api/v1/webhooks/{id}/test`
struct WebhookRoutes: Sendable {
    let repository: any WebhookRepository
    let dispatcher: WebhookDispatcher

    func register(on router: inout Router) {
        router.get("/api/v1/webhooks") { _, _ in
            .blocking { try list() }
        }
        router.post("/api/v1/webhooks") { request, _ in
            .blocking { try create(request.body) }
        }
        router.get("/api/v1/webhooks/{id}") { _, parameters in
            .blocking { .json(encoding: dto(try subscription(parameters["id"] ?? ""))) }
        }
        router.on("DELETE", "/api/v1/webhooks/{id}") { _, parameters in
            .blocking { try delete(parameters["id"] ?? "") }
        }
        router.get("/api/v1/webhooks/{id}/deliveries") { request, parameters in
            .blocking { try deliveries(parameters["id"] ?? "", QueryParameters(request.query)) }
        }
        router.post("/api/v1/webhooks/{id}/deliveries/{deliveryId}/replay") { _, parameters in
            .blocking { try replay(parameters["id"] ?? "", deliveryID: parameters["deliveryId"] ?? "") }
        }
        router.post("/api/v1/webhooks/{id}/test") { _, parameters in
            .blocking { try test(parameters["id"] ?? "") }
        }
        router.post("/api/v1/webhooks/{id}/rotate-secret") { request, parameters in
            .blocking { try rotateSecret(parameters["id"] ?? "", request.body) }
        }
    }

    /// A new secret for a subscription (generated, or the body's `secret`): the only answer besides the
    /// creation that shows one.
    private func rotateSecret(_ id: String, _ body: [UInt8]) throws -> HTTPResponse {
        let request = try APIBody.decode(RotateSecretRequest.self, from: body, allowEmpty: true)
        if let secret = request?.secret, WebhookSignature.key(ofSecret: secret) == nil {
            throw APIError(status: 422, code: "invalid_webhook", message: "secret must be whsec_ followed by base64 of 24 to 64 bytes")
        }
        let secret = request?.secret ?? WebhookSignature.generateSecret()
        guard let rotated = try dispatcher.rotateSecret(subscriptionID: id, to: secret) else {
            throw APIError(status: 404, code: "not_found", message: "No webhook subscription \(id)")
        }
        return .json(encoding: dto(rotated, revealingSecret: true))
    }

    private func list() throws -> HTTPResponse {
        let all = try repository.subscriptions()
        return .json(encoding: WebhookListDTO(webhooks: all.map { dto($0.subscription) }))
    }

    private func subscription(_ id: String) throws -> WebhookSubscription {
        guard let found = try repository.subscriptions().first(where: { $0.subscription.id == id }) else {
            throw APIError(status: 404, code: "not_found", message: "No webhook subscription \(id)")
        }
        return found.subscription
    }

    private func create(_ body: [UInt8]) throws -> HTTPResponse {
        guard let request = try APIBody.decode(CreateWebhookRequest.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        if let problem = WebhookSubscriptionRules.problem(url: request.url, events: request.events ?? [], secret: request.secret) {
            throw APIError(status: 422, code: "invalid_webhook", message: problem)
        }
        if let limit = request.maxConcurrentDeliveries, !(1...256).contains(limit) {
            throw APIError(status: 422, code: "invalid_webhook", message: "maxConcurrentDeliveries must be in 1…256")
        }
        let subscription = WebhookSubscription(
            id: WebhookSubscriptionRules.newID(), url: request.url,
            filter: WebhookSubscriptionRules.filter(events: request.events, devices: request.devices, topics: request.topics),
            secret: request.secret ?? WebhookSignature.generateSecret(), description: request.description,
            maxConcurrentDeliveries: request.maxConcurrentDeliveries,
            createdAt: dispatcher.clock.nowMilliseconds, source: "api")
        try dispatcher.add(subscription)
        return .json(status: 201, encoding: dto(subscription, revealingSecret: true))
    }

    private func delete(_ id: String) throws -> HTTPResponse {
        guard try dispatcher.remove(id: id) else {
            throw APIError(status: 404, code: "not_found", message: "No webhook subscription \(id)")
        }
        return HTTPResponse(status: 204)
    }

    private func deliveries(_ id: String, _ query: QueryParameters) throws -> HTTPResponse {
        _ = try subscription(id)
        var status: WebhookDeliveryStatus?
        if let text = query["status"] {
            guard let parsed = WebhookDeliveryStatus(rawValue: text) else {
                throw APIError(status: 400, code: "invalid_parameter", message: "status must be pending, succeeded or failed")
            }
            status = parsed
        }
        let limit = try query.integer("limit", default: 50, in: 1...1000)
        let before = try query["before"].map { text -> Int64 in
            guard let value = Int64(text), value > 0 else {
                throw APIError(status: 400, code: "invalid_parameter", message: "before must be a delivery id")
            }
            return value
        }
        let page = try repository.deliveries(subscriptionID: id, status: status, limit: limit, beforeID: before)
        return .json(encoding: WebhookDeliveryListDTO(deliveries: page.map(WebhookDeliveryDTO.init)))
    }

    private func replay(_ id: String, deliveryID: String) throws -> HTTPResponse {
        guard let number = Int64(deliveryID),
            let original = try repository.delivery(id: number), original.subscriptionID == id
        else {
            throw APIError(status: 404, code: "not_found", message: "No delivery \(deliveryID) of webhook \(id)")
        }
        guard let created = try dispatcher.replay(deliveryID: original.id) else {
            throw APIError(status: 404, code: "not_found", message: "No webhook subscription \(id)")
        }
        return .json(status: 202, encoding: WebhookDeliveryDTO(created))
    }

    private func test(_ id: String) throws -> HTTPResponse {
        _ = try subscription(id)
        guard let created = try dispatcher.sendTest(subscriptionID: id) else {
            throw APIError(status: 404, code: "not_found", message: "No webhook subscription \(id)")
        }
        return .json(status: 202, encoding: WebhookDeliveryDTO(created))
    }

    /// The subscription as the API shows it: its secret only when just created or rotated (secrets are
    /// write-only, docs/security.md).
    private func dto(_ subscription: WebhookSubscription, revealingSecret: Bool = false) -> WebhookDTO {
        WebhookDTO(
            subscription, status: dispatcher.endpointStatus(subscriptionID: subscription.id),
            revealingSecret: revealingSecret)
    }
}

/// Validation and defaults shared by the API and the configuration file.
enum WebhookSubscriptionRules {
    static func problem(url: String, events: [String], secret: String?) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = parsed.host, !host.isEmpty
        else {
            return "url must be an absolute http:// or https:// URL"
        }
        let known = Set(SandboxEventType.allCases.map(\.rawValue)).subtracting([SandboxEventType.webhookTest.rawValue])
        if let unknown = events.first(where: { !known.contains($0) }) {
            return "unknown event type \(unknown); known: \(known.sorted().joined(separator: ", "))"
        }
        if let secret, WebhookSignature.key(ofSecret: secret) == nil {
            return "secret must be whsec_ followed by base64 of 24 to 64 bytes"
        }
        return nil
    }

    static func filter(events: [String]?, devices: [String]?, topics: [String]?) -> EventFilter {
        EventFilter(
            types: Set((events ?? []).compactMap(SandboxEventType.init(rawValue:))),
            deviceTokens: Set((devices ?? []).map { $0.lowercased() }), topics: Set(topics ?? []))
    }

    static func newID() -> String {
        "wh_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
    }
}

struct CreateWebhookRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["url", "events", "devices", "topics", "secret", "description", "maxConcurrentDeliveries"]

    var url: String
    var events: [String]?
    var devices: [String]?
    var topics: [String]?
    var secret: String?
    var description: String?
    var maxConcurrentDeliveries: Int?
}

/// `POST /api/v1/webhooks/{id}/rotate-secret` (an empty body generates the new secret).
struct RotateSecretRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["secret"]

    var secret: String?
}

/// A subscription as the API shows it. `secret` is there only in the answers that create or rotate it.
struct WebhookDTO: Codable, Sendable {
    var id: String
    var url: String
    var events: [String]
    var devices: [String]
    var topics: [String]
    var secret: String?
    var description: String?
    var maxConcurrentDeliveries: Int?
    var createdAt: Int64
    var source: String
    /// `closed`, `open` or `half-open`.
    var circuit: String?
    var consecutiveFailures: Int?
    var inFlight: Int?

    init(
        _ subscription: WebhookSubscription, status: (breaker: String, consecutiveFailures: Int, inFlight: Int)?,
        revealingSecret: Bool
    ) {
        id = subscription.id
        url = subscription.url
        events = subscription.filter.types.map(\.rawValue).sorted()
        devices = subscription.filter.deviceTokens.sorted()
        topics = subscription.filter.topics.sorted()
        secret = revealingSecret ? subscription.secret : nil
        description = subscription.description
        maxConcurrentDeliveries = subscription.maxConcurrentDeliveries
        createdAt = subscription.createdAt
        source = subscription.source
        circuit = status?.breaker
        consecutiveFailures = status?.consecutiveFailures
        inFlight = status?.inFlight
    }
}

struct WebhookListDTO: Codable, Sendable {
    var webhooks: [WebhookDTO]
}

struct WebhookDeliveryDTO: Codable, Sendable {
    var id: Int64
    var subscriptionId: String
    var eventId: String?
    var messageId: String
    var eventType: String
    var status: String
    var attemptCount: Int
    var attempts: [WebhookAttempt]
    var nextAttemptAt: Int64?
    var createdAt: Int64
    var updatedAt: Int64
    var payload: JSON?

    init(_ delivery: WebhookDelivery) {
        id = delivery.id
        subscriptionId = delivery.subscriptionID
        eventId = delivery.eventID > 0 ? "evt_\(delivery.eventID)" : nil
        messageId = delivery.messageID
        eventType = delivery.eventType
        status = delivery.status.rawValue
        attemptCount = delivery.attempts.count
        attempts = delivery.attempts
        nextAttemptAt = delivery.status == .pending ? delivery.nextAttemptAt : nil
        createdAt = delivery.createdAt
        updatedAt = delivery.updatedAt
        // The envelope the sandbox wrote nests the client's payload (up to JSON.maxDepth) a few levels down.
        payload = try? JSON.parse(delivery.payload, maxDepth: JSON.maxDepth + 8)
    }
}

struct WebhookDeliveryListDTO: Codable, Sendable {
    var deliveries: [WebhookDeliveryDTO]
}
