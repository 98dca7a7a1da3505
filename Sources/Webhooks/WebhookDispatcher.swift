// APNs Sandbox — fans logged events out to webhook subscriptions and delivers them, at least once.
import Dispatch
import APNsProtocol
import Events
import Foundation
import Sandbox
import Support
import Synchronization

/// Delivers events to webhook subscriptions from a durable outbox.
///
/// ### How an event travels
/// 1. The push path only writes the event into the event log (in the same commit as its record) and the
///    store tells ``eventsCommitted(upTo:)``, which merely wakes this dispatcher.
/// 2. **Fan-out**: each subscription has a durable cursor (the last event id it has seen). The
///    dispatcher reads matching events after the cursor and, in one transaction, inserts a `pending`
///    delivery per event and moves the cursor. A crash before that commit re-reads the same events.
/// 3. **Attempts**: due deliveries are POSTed (signed afresh, ``WebhookSignature``), at most
///    ``WebhookSettings/maxConcurrentPerEndpoint`` per subscription, none while its ``CircuitBreaker``
///    is open. Results are written in batches; a delivery that failed gets its next time from the retry
///    schedule, or `failed` when the schedule is used up. A crash before a result is written repeats the
///    attempt after the restart: delivery is at least once (receivers de-duplicate on `webhook-id`).
///
/// ### Threads
/// All state lives on one serial dispatch queue; public methods may be called from any thread. Store
/// reads and writes happen on that queue, never on an event loop or the store's writer thread.
public final class WebhookDispatcher: Sendable {
    struct State {
        var endpoints: [String: WebhookEndpoint] = [:]
        var finished: [(result: WebhookAttemptResult, subscriptionID: String)] = []
        var isFlushScheduled = false
        var isRunning = false
        var wake = Wake()
    }

    /// When due retries and breaker trials are looked for: wall times on the clock, one timer for the earliest.
    struct Wake {
        var times = TimerQueue<Int64, Void>()
        /// The wall time the clock timer is set for.
        var armedFor: Int64?
        var timer: ScheduledTask?
    }

    public let settings: WebhookSettings
    let repository: any WebhookRepository
    let eventLog: any EventLogRepository
    let sender: any WebhookSending
    /// Wall time of deliveries and attempts (and of subscriptions the API creates), monotonic time of attempts.
    public let clock: any SandboxClock
    let logger: Logger
    /// Background QoS: libdispatch runs it at nice 10 on Linux, so under load the dispatcher yields the
    /// CPU to the event loops and the store writer (webhooks lag rather than slow pushes).
    let queue = DispatchQueue(label: "webhook-dispatcher", qos: .background)
    /// The nice value of the webhook machinery's own threads (the sender's, the outbox writer's).
    public static let niceness: Int32 = 10
    let state = Locked(State())
    /// The newest committed event id the dispatcher has been told about.
    let latestEventID = Atomic<Int64>(0)
    let isPumpScheduled = Atomic<Bool>(false)
    /// How often due retries and breaker trials are looked for even without new events.
    let tickMilliseconds: Int64
    /// Told about every attempt's result (on the dispatcher's queue, before it is recorded): the metrics.
    let onAttempt: @Sendable (WebhookAttemptResult) -> Void
    /// Most events fanned out per subscription per pass.
    static let fanOutBatch = 1000
    /// Most fanned-out deliveries kept in memory per subscription (the rest are read back when due).
    /// Small, so that an endpoint slower than the events soon reads its backlog from the store, where
    /// retries that fell due are ordered with it by due time instead of waiting behind fresh ones.
    static let maxReady = 1_000
    public static let userAgent = "APNs-Sandbox-Webhooks/1"

    public init(
        settings: WebhookSettings, repository: any WebhookRepository, eventLog: any EventLogRepository,
        sender: any WebhookSending, clock: any SandboxClock, logger: Logger, tickMilliseconds: Int64 = 250,
        onAttempt: @escaping @Sendable (WebhookAttemptResult) -> Void = { _ in }
    ) {
        self.onAttempt = onAttempt
        self.settings = settings
        self.repository = repository
        self.eventLog = eventLog
        self.sender = sender
        self.clock = clock
        self.logger = logger
        self.tickMilliseconds = tickMilliseconds
    }

    // MARK: - Lifecycle

    /// Loads the subscriptions and starts delivering (pending deliveries from before a restart first).
    public func start() throws {
        let latest = try eventLog.latestEventID()
        let stored = try repository.subscriptions()
        latestEventID.store(latest, ordering: .releasing)
        queue.sync {
            state.withLock { state in
                state.isRunning = true
                for (subscription, cursor) in stored {
                    state.endpoints[subscription.id] = WebhookEndpoint(
                        subscription, cursor: cursor, defaultCapacity: settings.maxConcurrentPerEndpoint)
                }
            }
        }
        scheduleTick()
        schedulePump()
    }

    /// Stops starting attempts and writes the results gathered so far. Attempts still in flight are
    /// aborted by the sender's shutdown; their deliveries stay pending and are attempted again after
    /// the next start (their aborted attempt is not recorded).
    public func shutdown() {
        queue.sync {
            let wake = state.withLock { state -> ScheduledTask? in
                state.isRunning = false
                defer { state.wake = Wake() }
                return state.wake.timer
            }
            wake?.cancel()
            flush()
        }
    }

    /// The store committed events up to `id`: fan them out soon. Cheap; safe from the store's writer thread.
    public func eventsCommitted(upTo id: Int64) {
        latestEventID.max(id, ordering: .acquiringAndReleasing)
        schedulePump()
    }

    // MARK: - Subscriptions and deliveries (API)

    /// Stores a new subscription; it receives events logged from now on.
    public func add(_ subscription: WebhookSubscription) throws {
        let cursor = latestEventID.load(ordering: .acquiring)
        try repository.saveSubscription(subscription, cursor: cursor)
        let stored = try repository.subscriptions().first { $0.subscription.id == subscription.id }
        // State is behind its own lock: no hop to the dispatcher's queue (callers are event loops).
        state.withLock { state in
            state.endpoints[subscription.id] = WebhookEndpoint(
                subscription, cursor: stored?.cursor ?? cursor, defaultCapacity: settings.maxConcurrentPerEndpoint)
        }
        schedulePump()
    }

    /// Gives a subscription a new signing secret: every attempt from now on is signed with it, none with
    /// the old one. Returns the updated subscription, nil when there is none with that id.
    public func rotateSecret(subscriptionID id: String, to secret: String) throws -> WebhookSubscription? {
        guard let stored = try repository.subscriptions().first(where: { $0.subscription.id == id }) else { return nil }
        var subscription = stored.subscription
        subscription.secret = secret
        // An update, never an insert: deleted meanwhile, it stays deleted.
        guard try repository.updateSubscription(subscription) else { return nil }
        state.withLock { state in
            guard let endpoint = state.endpoints[id] else { return }
            endpoint.target = WebhookTarget(
                subscriptionID: id, url: endpoint.target.url, key: WebhookSignature.key(ofSecret: secret) ?? [])
        }
        return subscription
    }

    /// Deletes a subscription and its delivery log; false when it did not exist.
    public func remove(id: String) throws -> Bool {
        // Forget it first, so no new delivery is fanned out for it; the store refuses deliveries of an
        // unknown subscription, so one being written meanwhile is not left behind either.
        _ = state.withLock { $0.endpoints.removeValue(forKey: id) }
        return try repository.deleteSubscription(id: id)
    }

    /// Queues a `webhook.test` message for one subscription (not logged as an event, not filtered).
    public func sendTest(subscriptionID: String) throws -> WebhookDelivery? {
        let now = clock.nowMilliseconds
        let messageID = "msg_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var data = JSONWriter()
        data.member("subscriptionId", subscriptionID)
        data.member("message", "This is a test event from APNs Sandbox.")
        var envelope = JSONWriter()
        envelope.member("id", messageID)
        envelope.member("type", SandboxEventType.webhookTest.rawValue)
        envelope.member("timestamp", ISOTimestamp.string(milliseconds: now))
        envelope.member("data", json: data.finish())
        return try enqueue(NewWebhookDelivery(
            subscriptionID: subscriptionID, eventID: 0, messageID: messageID,
            eventType: SandboxEventType.webhookTest.rawValue, payload: envelope.finish(), nextAttemptAt: now))
    }

    /// Delivers a delivery's message again, as a new delivery with the same `webhook-id`.
    public func replay(deliveryID: Int64) throws -> WebhookDelivery? {
        guard let original = try repository.delivery(id: deliveryID) else { return nil }
        return try enqueue(NewWebhookDelivery(
            subscriptionID: original.subscriptionID, eventID: original.eventID, messageID: original.messageID,
            eventType: original.eventType, payload: original.payload, nextAttemptAt: clock.nowMilliseconds))
    }

    private func enqueue(_ delivery: NewWebhookDelivery) throws -> WebhookDelivery? {
        let known = state.withLock { $0.endpoints[delivery.subscriptionID] != nil }
        guard known else { return nil }
        let created = try repository.enqueueDeliveries([delivery], cursors: [:], at: clock.nowMilliseconds).first
        schedulePump()
        return created
    }

    /// Live state of a subscription's endpoint for the API: breaker state, failures in a row, in flight.
    public func endpointStatus(subscriptionID: String) -> (breaker: String, consecutiveFailures: Int, inFlight: Int)? {
        state.withLock { state in
            state.endpoints[subscriptionID].map { ($0.breaker.name, $0.breaker.consecutiveFailures, $0.inFlight.count) }
        }
    }
}
