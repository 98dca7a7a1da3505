// APNs Sandbox — fans logged events out to webhook subscriptions and delivers them, at least once.
import Dispatch
import APNsProtocol
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
    private struct State {
        var endpoints: [String: WebhookEndpoint] = [:]
        var finished: [(result: WebhookAttemptResult, subscriptionID: String)] = []
        var isFlushScheduled = false
        var isRunning = false
    }

    public let settings: WebhookSettings
    private let repository: any WebhookRepository
    private let eventLog: any EventLogRepository
    private let sender: any WebhookSending
    /// Wall time of deliveries and attempts (and of subscriptions the API creates), monotonic time of attempts.
    public let clock: any SandboxClock
    private let logger: Logger
    /// Background QoS: libdispatch runs it at nice 10 on Linux, so under load the dispatcher yields the
    /// CPU to the event loops and the store writer (webhooks lag rather than slow pushes).
    private let queue = DispatchQueue(label: "webhook-dispatcher", qos: .background)
    /// The nice value of the webhook machinery's own threads (the sender's, the outbox writer's).
    public static let niceness: Int32 = 10
    private let state = Mutex(State())
    /// The newest committed event id the dispatcher has been told about.
    private let latestEventID = Atomic<Int64>(0)
    private let isPumpScheduled = Atomic<Bool>(false)
    /// How often due retries and breaker trials are looked for even without new events.
    private let tickMilliseconds: Int64
    /// Most events fanned out per subscription per pass.
    private static let fanOutBatch = 1000
    /// Most fanned-out deliveries kept in memory per subscription (the rest are read back when due).
    /// Small, so that an endpoint slower than the events soon reads its backlog from the store, where
    /// retries that fell due are ordered with it by due time instead of waiting behind fresh ones.
    private static let maxReady = 1_000
    public static let userAgent = "APNs-Sandbox-Webhooks/1"

    public init(
        settings: WebhookSettings, repository: any WebhookRepository, eventLog: any EventLogRepository,
        sender: any WebhookSending, clock: any SandboxClock, logger: Logger, tickMilliseconds: Int64 = 250
    ) {
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
            state.withLock { $0.isRunning = false }
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
        let created = try repository.enqueueDeliveries([delivery], cursors: [:]).first
        schedulePump()
        return created
    }

    /// Live state of a subscription's endpoint for the API: breaker state, failures in a row, in flight.
    public func endpointStatus(subscriptionID: String) -> (breaker: String, consecutiveFailures: Int, inFlight: Int)? {
        state.withLock { state in
            state.endpoints[subscriptionID].map { ($0.breaker.name, $0.breaker.consecutiveFailures, $0.inFlight.count) }
        }
    }

    // MARK: - The pump

    private func schedulePump() {
        guard !isPumpScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            isPumpScheduled.store(false, ordering: .releasing)
            pump()
        }
    }

    private func scheduleTick() {
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(tickMilliseconds))) { [self] in
            guard state.withLock({ $0.isRunning }) else { return }
            pump()
            scheduleTick()
        }
    }

    /// On the queue: fan out new events, then start the attempts that are due and allowed.
    private func pump() {
        guard state.withLock({ $0.isRunning }) else { return }
        fanOut()
        startDueAttempts()
    }

    private func fanOut() {
        let latest = latestEventID.load(ordering: .acquiring)
        let behind = state.withLock { state in
            state.endpoints.values.filter { $0.cursor < latest }.map { ($0.target.subscriptionID, $0.filter, $0.cursor) }
        }
        guard !behind.isEmpty else { return }
        let now = clock.nowMilliseconds
        let firstDelay = settings.retryScheduleMilliseconds.first ?? 0
        var deliveries: [NewWebhookDelivery] = []
        var cursors: [String: Int64] = [:]
        let created: [WebhookDelivery]
        // One envelope per event, however many subscriptions receive it.
        var envelopes: [Int64: [UInt8]] = [:]
        func envelope(_ event: SandboxEvent) -> [UInt8] {
            if let cached = envelopes[event.id] { return cached }
            let built = event.envelope
            envelopes[event.id] = built
            return built
        }
        do {
            for (id, filter, cursor) in behind {
                let events = try eventLog.events(after: cursor, matching: filter, limit: Self.fanOutBatch)
                // Fewer than a batch: everything up to `latest` (and the last event read) has been seen.
                let seenUpTo = events.count < Self.fanOutBatch ? max(latest, events.last?.id ?? 0) : (events.last?.id ?? latest)
                cursors[id] = seenUpTo
                for event in events {
                    deliveries.append(NewWebhookDelivery(
                        subscriptionID: id, eventID: event.id, messageID: event.publicID,
                        eventType: event.type.rawValue, payload: envelope(event), nextAttemptAt: now + firstDelay))
                }
            }
            created = try repository.enqueueDeliveries(deliveries, cursors: cursors)
        } catch {
            logger.warning("webhook fan-out failed; will retry", [("error", "\(error)")])
            return
        }
        let bySubscription = Dictionary(grouping: created, by: \.subscriptionID)
        state.withLock { state in
            for (id, cursor) in cursors {
                guard let endpoint = state.endpoints[id] else { continue }
                endpoint.cursor = max(endpoint.cursor, cursor)
                if firstDelay == 0, let fresh = bySubscription[id], endpoint.readyCount + fresh.count <= Self.maxReady {
                    endpoint.addReady(fresh)
                }
            }
        }
        if cursors.values.contains(where: { $0 < latest }) { schedulePump() }
    }

    private func startDueAttempts() {
        guard state.withLock({ $0.isRunning }) else { return }
        let now = clock.nowMilliseconds
        // Under the lock: how many may start per endpoint, taken first from the fanned-out ones in memory.
        var toQuery: [(id: String, allowed: Int, busy: Set<Int64>)] = []
        var toSend = state.withLock { state -> [(WebhookDelivery, WebhookTarget)] in
            var toSend: [(WebhookDelivery, WebhookTarget)] = []
            for (id, endpoint) in state.endpoints {
                var allowed = endpoint.breaker.allowedAttempts(
                    capacity: endpoint.capacity, inFlight: endpoint.inFlight.count, now: now)
                while allowed > 0, let delivery = endpoint.takeReady() {
                    endpoint.inFlight.insert(delivery.id)
                    toSend.append((delivery, endpoint.target))
                    allowed -= 1
                }
                if allowed > 0 { toQuery.append((id, allowed, endpoint.busy)) }
            }
            return toSend
        }
        // Retries and deliveries from before a restart come from the store.
        for (id, allowed, busy) in toQuery {
            let due: [WebhookDelivery]
            do {
                due = try repository.dueDeliveries(subscriptionID: id, now: now, excluding: busy, limit: allowed)
            } catch {
                logger.warning("reading due webhook deliveries failed", [("error", "\(error)")])
                due = []
            }
            toSend += state.withLock { state -> [(WebhookDelivery, WebhookTarget)] in
                guard let endpoint = state.endpoints[id] else { return [] }
                if due.isEmpty, endpoint.inFlight.isEmpty, endpoint.breaker.state == .halfOpen {
                    // Nothing to try the endpoint with: stay open until there is.
                    endpoint.breaker.trialNotStarted(now: now)
                }
                var picked: [(WebhookDelivery, WebhookTarget)] = []
                for delivery in due where !endpoint.inFlight.contains(delivery.id) {
                    endpoint.inFlight.insert(delivery.id)
                    picked.append((delivery, endpoint.target))
                }
                return picked
            }
        }
        for (delivery, endpoint) in toSend { send(delivery, to: endpoint) }
    }

    private func send(_ delivery: WebhookDelivery, to endpoint: WebhookTarget) {
        let startedAt = clock.nowMilliseconds
        let started = clock.monotonicNanoseconds
        guard let url = endpoint.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            !endpoint.key.isEmpty
        else {
            finished(delivery, subscriptionID: endpoint.subscriptionID, startedAt: startedAt, durationMs: 0,
                     result: .failed("the subscription's URL or secret is invalid"))
            return
        }
        var headers = WebhookSignature.headers(
            key: endpoint.key, messageID: delivery.messageID, timestamp: startedAt / 1000, body: delivery.payload)
        headers.append(("content-type", "application/json"))
        headers.append(("user-agent", Self.userAgent))
        let subscriptionID = endpoint.subscriptionID
        sender.post(url: url, headers: headers, body: delivery.payload, timeoutMilliseconds: settings.timeoutMilliseconds) {
            [self] result in
            let duration = Double(clock.monotonicNanoseconds &- started) / 1_000_000
            queue.async { [self] in
                finished(delivery, subscriptionID: subscriptionID, startedAt: startedAt, durationMs: duration, result: result)
            }
        }
    }

    /// On the queue: an attempt ended. Its result is written with others in a moment.
    private func finished(
        _ delivery: WebhookDelivery, subscriptionID: String, startedAt: Int64, durationMs: Double,
        result: WebhookSendResult
    ) {
        // After shutdown the sender aborts what is in flight: not the endpoint's fault, so not recorded
        // (the delivery stays pending and is attempted again after the next start).
        guard state.withLock({ $0.isRunning }) else { return }
        let now = clock.nowMilliseconds
        let attempt: WebhookAttempt
        let succeeded: Bool
        switch result {
        case .answered(let status):
            succeeded = (200..<300).contains(status)
            attempt = WebhookAttempt(
                at: startedAt, statusCode: status, durationMs: durationMs,
                error: succeeded ? nil : "HTTP \(status)")
        case .failed(let message):
            succeeded = false
            attempt = WebhookAttempt(at: startedAt, statusCode: nil, durationMs: durationMs, error: message)
        }
        let attemptsDone = delivery.attempts.count + 1
        let next = succeeded ? nil : settings.nextAttempt(after: attemptsDone, failedAt: now, random: { Double.random(in: 0...1) })
        let status: WebhookDeliveryStatus = succeeded ? .succeeded : (next == nil ? .failed : .pending)
        let scheduleFlush = state.withLock { state -> Bool in
            if let endpoint = state.endpoints[subscriptionID] {
                if succeeded {
                    endpoint.breaker.recordSuccess()
                } else {
                    endpoint.breaker.recordFailure(now: now, settings: settings)
                }
                // The slot is free for the next attempt now; the delivery stays excluded until its
                // result is committed.
                endpoint.inFlight.remove(delivery.id)
                endpoint.recording.insert(delivery.id)
            }
            state.finished.append((WebhookAttemptResult(
                deliveryID: delivery.id, attempt: attempt, status: status, nextAttemptAt: next), subscriptionID))
            defer { state.isFlushScheduled = true }
            return !state.isFlushScheduled
        }
        if let next { wake(at: next) }
        if let reopens = state.withLock({ $0.endpoints[subscriptionID]?.breaker.reopensAt }) { wake(at: reopens) }
        if scheduleFlush {
            // A short pause gathers the results of concurrent attempts into one transaction.
            queue.asyncAfter(deadline: .now() + .milliseconds(5)) { [self] in
                flush()
                pump()
            }
        }
        startDueAttempts()
    }

    /// On the queue: writes the gathered results, then frees their deliveries for new attempts.
    private func flush() {
        let batch = state.withLock { state in
            state.isFlushScheduled = false
            defer { state.finished = [] }
            return state.finished
        }
        guard !batch.isEmpty else { return }
        do {
            try repository.recordAttempts(batch.map(\.result), at: clock.nowMilliseconds)
        } catch {
            // The deliveries stay pending in the store: they are attempted again (at least once).
            logger.warning("recording webhook attempts failed", [("error", "\(error)"), ("count", "\(batch.count)")])
        }
        state.withLock { state in
            for (result, subscriptionID) in batch {
                state.endpoints[subscriptionID]?.recording.remove(result.deliveryID)
            }
        }
    }

    private func wake(at wall: Int64) {
        let delay = max(0, wall - clock.nowMilliseconds)
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(delay))) { [self] in pump() }
    }
}
