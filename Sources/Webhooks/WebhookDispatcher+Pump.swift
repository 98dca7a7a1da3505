// APNs Sandbox — the dispatcher's pump: fanning new events out to subscriptions, starting due attempts.
import Dispatch
import Events
import Sandbox

/// On the dispatcher's queue (see ``WebhookDispatcher``, "How an event travels", steps 2 and 3).
extension WebhookDispatcher {
    func schedulePump() {
        guard !isPumpScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            isPumpScheduled.store(false, ordering: .releasing)
            pump()
        }
    }

    func scheduleTick() {
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(tickMilliseconds))) { [self] in
            guard state.withLock({ $0.isRunning }) else { return }
            pump()
            scheduleTick()
        }
    }

    /// On the queue: fan out new events, then start the attempts that are due and allowed.
    func pump() {
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
            created = try repository.enqueueDeliveries(deliveries, cursors: cursors, at: now)
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

    func startDueAttempts() {
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
}
