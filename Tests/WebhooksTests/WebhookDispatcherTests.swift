// APNs Sandbox — the webhook dispatcher's rules with in-memory storage and a scripted sender.
import Events
import Foundation
import Sandbox
import Support
import Synchronization
import TestProcessSupport
import Testing
import Webhooks

/// The outbox in memory.
private final class MemoryOutbox: WebhookRepository {
    private struct State {
        var subscriptions: [String: (WebhookSubscription, Int64)] = [:]
        var deliveries: [Int64: WebhookDelivery] = [:]
        var nextID: Int64 = 1
    }

    private let state = Locked(State())

    func saveSubscription(_ subscription: WebhookSubscription, cursor: Int64) throws {
        state.withLock { $0.subscriptions[subscription.id] = (subscription, $0.subscriptions[subscription.id]?.1 ?? cursor) }
    }

    func updateSubscription(_ subscription: WebhookSubscription) throws -> Bool {
        state.withLock { state in
            guard let cursor = state.subscriptions[subscription.id]?.1 else { return false }
            state.subscriptions[subscription.id] = (subscription, cursor)
            return true
        }
    }

    func subscriptions() throws -> [(subscription: WebhookSubscription, cursor: Int64)] {
        state.withLock { $0.subscriptions.values.map { ($0.0, $0.1) } }
    }

    func deleteSubscription(id: String) throws -> Bool {
        state.withLock { state in
            state.deliveries = state.deliveries.filter { $0.value.subscriptionID != id }
            return state.subscriptions.removeValue(forKey: id) != nil
        }
    }

    func enqueueDeliveries(_ deliveries: [NewWebhookDelivery], cursors: [String: Int64], at now: Int64) throws -> [WebhookDelivery] {
        state.withLock { state in
            var created: [WebhookDelivery] = []
            for new in deliveries where state.subscriptions[new.subscriptionID] != nil {
                let delivery = WebhookDelivery(
                    id: state.nextID, subscriptionID: new.subscriptionID, eventID: new.eventID, messageID: new.messageID,
                    eventType: new.eventType, payload: new.payload, status: .pending, nextAttemptAt: new.nextAttemptAt,
                    createdAt: 0, updatedAt: 0)
                state.deliveries[state.nextID] = delivery
                state.nextID += 1
                created.append(delivery)
            }
            for (id, cursor) in cursors {
                if let (subscription, old) = state.subscriptions[id] { state.subscriptions[id] = (subscription, max(old, cursor)) }
            }
            return created
        }
    }

    func dueDeliveries(subscriptionID: String, now: Int64, excluding: Set<Int64>, limit: Int) throws -> [WebhookDelivery] {
        state.withLock { state in
            Array(state.deliveries.values
                .filter { $0.subscriptionID == subscriptionID && $0.status == .pending && ($0.nextAttemptAt ?? .max) <= now && !excluding.contains($0.id) }
                .sorted { $0.id < $1.id }.prefix(limit))
        }
    }

    func recordAttempts(_ results: [WebhookAttemptResult], at now: Int64) throws {
        state.withLock { state in
            for result in results {
                state.deliveries[result.deliveryID]?.attempts.append(result.attempt)
                state.deliveries[result.deliveryID]?.status = result.status
                state.deliveries[result.deliveryID]?.nextAttemptAt = result.nextAttemptAt
            }
        }
    }

    func deliveries(subscriptionID: String, status: WebhookDeliveryStatus?, limit: Int, beforeID: Int64?) throws -> [WebhookDelivery] {
        state.withLock { state in
            Array(state.deliveries.values.filter { $0.subscriptionID == subscriptionID && (status == nil || $0.status == status) }
                .sorted { $0.id > $1.id }.prefix(limit))
        }
    }

    func delivery(id: Int64) throws -> WebhookDelivery? { state.withLock { $0.deliveries[id] } }

    func pruneDeliveries(finishedBefore cutoff: Int64) throws -> Int { 0 }

    var all: [WebhookDelivery] { state.withLock { $0.deliveries.values.sorted { $0.id < $1.id } } }
}

/// The event log in memory.
private final class MemoryEventLog: EventLogRepository {
    private let events = Locked<[SandboxEvent]>([])

    func log(_ drafts: [EventDraft]) -> [SandboxEvent] {
        events.withLock { events in
            let logged = drafts.enumerated().map { SandboxEvent(id: Int64(events.count + $0.offset + 1), draft: $0.element) }
            events += logged
            return logged
        }
    }

    func appendEvents(_ drafts: [EventDraft], completion: @escaping @Sendable (Result<[SandboxEvent], any Error>) -> Void) {
        completion(.success(log(drafts)))
    }

    func events(after id: Int64, matching filter: EventFilter, limit: Int) throws -> [SandboxEvent] {
        Array(events.withLock { $0 }.filter { $0.id > id && filter.matches($0) }.prefix(limit))
    }

    func latestEventID() throws -> Int64 { events.withLock { Int64($0.count) } }
    func oldestEventID() throws -> Int64? { events.withLock { $0.isEmpty ? nil : 1 } }
    func pruneEvents(maxEvents: Int, olderThan cutoff: Int64) throws -> Int { 0 }
}

/// Answers every post with `status` (nil: a connection failure), at once or, when `holding`, only on
/// ``release()``; counts posts.
private final class ScriptedSender: WebhookSending {
    let status: Int?
    let holding: Bool
    let posts = Atomic<Int>(0)
    private let held = Locked<[@Sendable () -> Void]>([])

    init(status: Int?, holding: Bool = false) {
        self.status = status
        self.holding = holding
    }

    func post(url: URL, headers: [(String, String)], body: [UInt8], timeoutMilliseconds: Int64,
              completion: @escaping @Sendable (WebhookSendResult) -> Void) {
        posts.add(1, ordering: .relaxed)
        let result: WebhookSendResult = status.map { .answered(status: $0) } ?? .failed("connection refused")
        if holding {
            held.withLock { $0.append { completion(result) } }
        } else {
            DispatchQueue.global().async { completion(result) }
        }
    }

    /// Answers the held posts now.
    func release() {
        for answer in held.withLock({ held in defer { held = [] }; return held }) { answer() }
    }
}

@Suite(.scaledTimeLimit(minutes: 1))
struct WebhookDispatcherTests {
    private func make(
        _ sender: ScriptedSender, configure: (inout WebhookSettings) -> Void = { _ in }
    ) throws -> (WebhookDispatcher, MemoryOutbox, MemoryEventLog) {
        var settings = WebhookSettings()
        settings.jitter = 0
        configure(&settings)
        let outbox = MemoryOutbox()
        let log = MemoryEventLog()
        let dispatcher = WebhookDispatcher(
            settings: settings, repository: outbox, eventLog: log, sender: sender, clock: SystemClock(),
            logger: Logger(label: "test", level: .error, sink: .capturing()), tickMilliseconds: 20)
        try dispatcher.start()
        return (dispatcher, outbox, log)
    }

    private func subscribe(_ dispatcher: WebhookDispatcher, types: Set<SandboxEventType> = []) throws {
        try dispatcher.add(WebhookSubscription(
            id: "wh_test", url: "http://127.0.0.1:9/", filter: EventFilter(types: types),
            secret: WebhookSignature.generateSecret(), createdAt: 0))
    }

    private func publish(_ log: MemoryEventLog, _ dispatcher: WebhookDispatcher, _ types: [SandboxEventType]) {
        let logged = log.log(types.map { EventDraft(type: $0, time: 0, data: Array("{}".utf8)) })
        if let last = logged.last { dispatcher.eventsCommitted(upTo: last.id) }
    }

    private func waitUntil(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition()
    }

    /// Matching events become deliveries once each, and a 2xx makes them `succeeded` after one attempt.
    @Test func fansOutMatchingEventsAndSucceeds() async throws {
        let sender = ScriptedSender(status: 204)
        let (dispatcher, outbox, log) = try make(sender)
        defer { dispatcher.shutdown() }
        try subscribe(dispatcher, types: [.notificationDisplayed])
        publish(log, dispatcher, [.pushAccepted, .notificationDisplayed, .deviceUpdated, .notificationDisplayed])
        #expect(try await waitUntil { outbox.all.count == 2 && outbox.all.allSatisfy { $0.status == .succeeded } })
        #expect(outbox.all.map(\.eventID) == [2, 4])
        #expect(outbox.all.allSatisfy { $0.attempts.count == 1 && $0.attempts.first?.statusCode == 204 })
        #expect(try outbox.subscriptions().first?.cursor == 4)
        #expect(sender.posts.load(ordering: .relaxed) == 2)
    }

    /// Every attempt of the schedule fails: the delivery is `failed` with one attempt per entry, and no
    /// more requests follow.
    @Test func failsAfterTheScheduleIsUsedUp() async throws {
        let sender = ScriptedSender(status: 503)
        let (dispatcher, outbox, log) = try make(sender) { $0.retryScheduleMilliseconds = [0, 20, 20] }
        defer { dispatcher.shutdown() }
        try subscribe(dispatcher)
        publish(log, dispatcher, [.pushAccepted])
        #expect(try await waitUntil { outbox.all.first?.status == .failed })
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(outbox.all.first?.attempts.map(\.statusCode) == [503, 503, 503])
        #expect(sender.posts.load(ordering: .relaxed) == 3)
    }

    /// Failures in a row open the breaker: no more attempts while it is open; deliveries stay pending.
    @Test func breakerStopsAttemptsToADeadEndpoint() async throws {
        let sender = ScriptedSender(status: nil)
        let (dispatcher, outbox, log) = try make(sender) {
            $0.retryScheduleMilliseconds = [0, 10, 10, 10, 10, 10]
            $0.breakerFailureThreshold = 3
            $0.breakerCooldownMilliseconds = 60_000
            $0.maxConcurrentPerEndpoint = 1
        }
        defer { dispatcher.shutdown() }
        try subscribe(dispatcher)
        publish(log, dispatcher, [.pushAccepted, .pushAccepted, .pushAccepted, .pushAccepted, .pushAccepted])
        #expect(try await waitUntil { dispatcher.endpointStatus(subscriptionID: "wh_test")?.breaker == "open" })
        let posts = sender.posts.load(ordering: .relaxed)
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(sender.posts.load(ordering: .relaxed) == posts, "no attempts while the breaker is open")
        #expect(posts == 3)
        #expect(outbox.all.count == 5 && outbox.all.allSatisfy { $0.status == .pending })
    }

    /// Attempts aborted by shutdown are not recorded: their deliveries stay pending for the next start.
    @Test func shutdownLeavesInFlightDeliveriesPending() async throws {
        let sender = ScriptedSender(status: 200, holding: true)
        let (dispatcher, outbox, log) = try make(sender)
        try subscribe(dispatcher)
        publish(log, dispatcher, [.pushAccepted])
        #expect(try await waitUntil { sender.posts.load(ordering: .relaxed) == 1 })
        dispatcher.shutdown()
        sender.release()  // the answer arrives after shutdown, as an aborted transfer's would
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(outbox.all.first?.status == .pending && outbox.all.first?.attempts.isEmpty == true)
    }

    /// A deleted subscription gets no more deliveries, and its log goes with it.
    @Test func removedSubscriptionGetsNothing() async throws {
        let sender = ScriptedSender(status: 200)
        let (dispatcher, outbox, log) = try make(sender)
        defer { dispatcher.shutdown() }
        try subscribe(dispatcher)
        #expect(try dispatcher.remove(id: "wh_test"))
        publish(log, dispatcher, [.pushAccepted])
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(outbox.all.isEmpty && sender.posts.load(ordering: .relaxed) == 0)
        #expect(try !dispatcher.remove(id: "wh_test"))
    }
}
