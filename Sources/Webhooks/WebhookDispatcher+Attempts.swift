// APNs Sandbox — one webhook attempt: signed, sent, its result gathered and written in a batch.
import Dispatch
import Events
import Foundation
import Sandbox
import Support

extension WebhookDispatcher {
    /// On the queue: signs and posts one delivery; the sender's answer comes back to ``finished``.
    func send(_ delivery: WebhookDelivery, to endpoint: WebhookTarget) {
        let startedAt = clock.nowMilliseconds
        let started = clock.monotonicNanoseconds
        guard let url = endpoint.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            !endpoint.key.isEmpty
        else {
            finished(delivery, subscriptionID: endpoint.subscriptionID, startedAt: startedAt, durationMs: 0,
                     result: .failed("the subscription's URL or secret is invalid"))
            return
        }
        // `webhook-timestamp` is real time, not the clock's: receivers reject timestamps far from their own
        // clock (Standard Webhooks' replay check), and a virtual clock a test moved by hours must not make
        // every signature fail. The attempt's time in the delivery log (`startedAt`) is the clock's.
        var headers = WebhookSignature.headers(
            key: endpoint.key, messageID: delivery.messageID, timestamp: WallClock.milliseconds() / 1000,
            body: delivery.payload)
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
        let attemptResult = WebhookAttemptResult(deliveryID: delivery.id, attempt: attempt, status: status, nextAttemptAt: next)
        onAttempt(attemptResult)
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
            state.finished.append((attemptResult, subscriptionID))
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
    func flush() {
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
}
