// APNs Sandbox — webhook subscriptions and their durable outbox, as the store keeps them.
import Sandbox

/// An endpoint that receives events (Standard Webhooks).
public struct WebhookSubscription: Sendable, Codable, Equatable {
    /// `wh_` and random characters, or the id given in `config/`.
    public var id: String
    /// `http://` or `https://` URL the events are POSTed to.
    public var url: String
    /// Which events it receives (empty sets: all).
    public var filter: EventFilter
    /// `whsec_` + base64 of the signing key.
    public var secret: String
    public var description: String?
    /// Most deliveries in flight to this endpoint at once (nil: the server's default).
    public var maxConcurrentDeliveries: Int?
    /// Wall ms.
    public var createdAt: Int64
    /// Where it came from: `api` or `config` (config ones are re-read at every start).
    public var source: String

    public init(
        id: String, url: String, filter: EventFilter = EventFilter(), secret: String, description: String? = nil,
        maxConcurrentDeliveries: Int? = nil, createdAt: Int64, source: String = "api"
    ) {
        self.id = id
        self.url = url
        self.filter = filter
        self.secret = secret
        self.description = description
        self.maxConcurrentDeliveries = maxConcurrentDeliveries
        self.createdAt = createdAt
        self.source = source
    }
}

/// Where a delivery stands.
public enum WebhookDeliveryStatus: String, Sendable, Codable, CaseIterable {
    /// Waiting for its next attempt (or for the first).
    case pending
    /// An attempt got a 2xx answer in time.
    case succeeded
    /// Every attempt of the retry schedule failed.
    case failed
}

/// One try at delivering.
public struct WebhookAttempt: Sendable, Codable, Equatable {
    /// Wall ms when the request was sent.
    public var at: Int64
    /// The HTTP status, nil when there was no answer (connection refused, timeout).
    public var statusCode: Int?
    public var durationMs: Double
    public var error: String?

    public init(at: Int64, statusCode: Int?, durationMs: Double, error: String?) {
        self.at = at
        self.statusCode = statusCode
        self.durationMs = durationMs
        self.error = error
    }
}

/// One event (or test message) on its way to one subscription.
public struct WebhookDelivery: Sendable, Equatable {
    public var id: Int64
    public var subscriptionID: String
    /// The logged event's id (0 for a test message).
    public var eventID: Int64
    /// `webhook-id`: the same on every attempt and on replays.
    public var messageID: String
    public var eventType: String
    /// The request body (the event envelope).
    public var payload: [UInt8]
    public var status: WebhookDeliveryStatus
    public var attempts: [WebhookAttempt]
    /// Wall ms of the next attempt (pending only).
    public var nextAttemptAt: Int64?
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        id: Int64, subscriptionID: String, eventID: Int64, messageID: String, eventType: String, payload: [UInt8],
        status: WebhookDeliveryStatus, attempts: [WebhookAttempt] = [], nextAttemptAt: Int64?, createdAt: Int64,
        updatedAt: Int64
    ) {
        self.id = id
        self.subscriptionID = subscriptionID
        self.eventID = eventID
        self.messageID = messageID
        self.eventType = eventType
        self.payload = payload
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A delivery to create (the store assigns the id).
public struct NewWebhookDelivery: Sendable {
    public var subscriptionID: String
    public var eventID: Int64
    public var messageID: String
    public var eventType: String
    public var payload: [UInt8]
    public var nextAttemptAt: Int64

    public init(subscriptionID: String, eventID: Int64, messageID: String, eventType: String, payload: [UInt8], nextAttemptAt: Int64) {
        self.subscriptionID = subscriptionID
        self.eventID = eventID
        self.messageID = messageID
        self.eventType = eventType
        self.payload = payload
        self.nextAttemptAt = nextAttemptAt
    }
}

/// The outcome of one attempt, to record.
public struct WebhookAttemptResult: Sendable {
    public var deliveryID: Int64
    public var attempt: WebhookAttempt
    /// The delivery's status after this attempt.
    public var status: WebhookDeliveryStatus
    public var nextAttemptAt: Int64?

    public init(deliveryID: Int64, attempt: WebhookAttempt, status: WebhookDeliveryStatus, nextAttemptAt: Int64?) {
        self.deliveryID = deliveryID
        self.attempt = attempt
        self.status = status
        self.nextAttemptAt = nextAttemptAt
    }
}

/// Durable subscriptions and outbox (the Store implements it). Writes are durable when they return.
public protocol WebhookRepository: Sendable {
    /// Inserts or replaces a subscription. A new one starts its cursor at `cursor` (events after it are
    /// delivered); an existing one keeps its cursor.
    func saveSubscription(_ subscription: WebhookSubscription, cursor: Int64) throws
    /// Replaces an existing subscription's record (its cursor kept); false when there is none, which it
    /// never creates (a rotation racing a deletion must not bring the subscription back).
    func updateSubscription(_ subscription: WebhookSubscription) throws -> Bool
    /// Every subscription with its cursor (the last event id fanned out to it).
    func subscriptions() throws -> [(subscription: WebhookSubscription, cursor: Int64)]
    /// Removes a subscription and its deliveries.
    @discardableResult
    func deleteSubscription(id: String) throws -> Bool
    /// Creates deliveries (none for a subscription that no longer exists) and moves each subscription's
    /// cursor, in one transaction; returns the deliveries created (created and updated `now`, the clock's wall ms).
    func enqueueDeliveries(
        _ deliveries: [NewWebhookDelivery], cursors: [String: Int64], at now: Int64
    ) throws -> [WebhookDelivery]
    /// Pending deliveries of a subscription due at `now`, oldest first, skipping `excluding`.
    func dueDeliveries(subscriptionID: String, now: Int64, excluding: Set<Int64>, limit: Int) throws -> [WebhookDelivery]
    /// Appends each attempt to its delivery and sets its status, in one transaction.
    func recordAttempts(_ results: [WebhookAttemptResult], at now: Int64) throws
    /// A subscription's deliveries, newest first; `status` nil means all.
    func deliveries(subscriptionID: String, status: WebhookDeliveryStatus?, limit: Int, beforeID: Int64?) throws -> [WebhookDelivery]
    func delivery(id: Int64) throws -> WebhookDelivery?
    /// Deletes finished deliveries last updated before `cutoff`; returns how many.
    @discardableResult
    func pruneDeliveries(finishedBefore cutoff: Int64) throws -> Int
}
