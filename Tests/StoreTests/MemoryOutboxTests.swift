// APNs Sandbox — MemoryOutbox against SQLiteStore's outbox: one scenario run on both, the same answers.
import Events
import Foundation
import Sandbox
@testable import Store
import Synchronization
import Testing
import Support

/// The outbox calls the server makes beyond ``WebhookRepository``, so that one scenario drives both stores.
protocol ServerOutbox: WebhookRepository {
    func clampSubscriptionCursors(to latest: Int64) throws -> Int
    func retryingDeliveryCount() throws -> Int
    func close()
}

extension SQLiteStore: ServerOutbox {}
extension MemoryOutbox: ServerOutbox {}

@Suite struct MemoryOutboxTests {
    private static let failure = WebhookAttempt(at: 150, statusCode: 500, durationMs: 12.5, error: "HTTP 500 \"busy\"\n")
    private static let refused = WebhookAttempt(at: 170, statusCode: nil, durationMs: 0.25, error: "connection refused")
    private static let success = WebhookAttempt(at: 500, statusCode: 204, durationMs: 3, error: nil)

    private static func subscription(_ id: String, createdAt: Int64, url: String = "http://127.0.0.1:9/") -> WebhookSubscription {
        WebhookSubscription(
            id: id, url: url, filter: EventFilter(types: [.pushAccepted], topics: ["com.example.app"]), secret: "whsec_\(id)",
            description: "about \(id)", maxConcurrentDeliveries: 4, createdAt: createdAt)
    }

    private static func new(_ subscriptionID: String, event: Int64, at next: Int64, payload: [UInt8] = [0x7B, 0x7D]) -> NewWebhookDelivery {
        NewWebhookDelivery(
            subscriptionID: subscriptionID, eventID: event, messageID: "msg_\(event)", eventType: "push.accepted",
            payload: payload, nextAttemptAt: next)
    }

    private static func ids(_ deliveries: [WebhookDelivery]) -> [Int64] { deliveries.map(\.id) }

    private static func closedCode(_ body: () throws -> Void) -> StoreError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? StoreError)?.code
        }
    }

    /// Drives `outbox` through every call, asserting the expected values, and returns what it answered
    /// along the way (for comparing the two implementations answer by answer).
    private static func scenario(_ outbox: some ServerOutbox) throws -> [String] {
        var answers: [String] = []
        func note(_ value: Any) { answers.append(String(describing: value)) }

        // Subscriptions: ordered by the first save's createdAt, then the id's bytes (é and e + ◌́ are two ids).
        try outbox.saveSubscription(subscription("wh_b", createdAt: 20), cursor: 0)
        try outbox.saveSubscription(subscription("wh_a", createdAt: 20), cursor: 0)
        try outbox.saveSubscription(subscription("wh_c", createdAt: 10), cursor: 5)
        try outbox.saveSubscription(subscription("\u{E9}", createdAt: 30), cursor: 1)
        try outbox.saveSubscription(subscription("e\u{301}", createdAt: 30), cursor: 2)
        // Byte order puts e + ◌́ + z before é; Swift's String order (on normalized text) would not.
        try outbox.saveSubscription(subscription("e\u{301}z", createdAt: 30), cursor: 3)
        // A re-save replaces the record but keeps the cursor and the place in the order.
        try outbox.saveSubscription(subscription("wh_a", createdAt: 1, url: "http://127.0.0.1:10/"), cursor: 99)
        #expect(try outbox.updateSubscription(subscription("wh_zz", createdAt: 0)) == false)
        #expect(try outbox.updateSubscription(subscription("wh_b", createdAt: 20, url: "https://b.example/")) == true)
        var all = try outbox.subscriptions()
        // Bytes, not Strings: Swift's `==` takes é and e + ◌́ for the same string.
        #expect(all.map { Array($0.subscription.id.utf8) }
            == ["wh_c", "wh_a", "wh_b", "e\u{301}", "e\u{301}z", "\u{E9}"].map { Array($0.utf8) })
        #expect(all.map(\.cursor) == [5, 0, 0, 2, 3, 1])
        #expect(all[1].subscription == subscription("wh_a", createdAt: 1, url: "http://127.0.0.1:10/"))
        #expect(all[2].subscription.url == "https://b.example/")
        note(all.map { "\($0.subscription) \($0.cursor)" })

        // Enqueue: none for a subscription that does not exist; ids from 1; cursors only move forward.
        let created = try outbox.enqueueDeliveries(
            [new("wh_a", event: 1, at: 100), new("wh_gone", event: 2, at: 0), new("wh_a", event: 3, at: 90),
             new("wh_b", event: 4, at: 100), new("wh_a", event: 5, at: 100, payload: []), new("\u{E9}", event: 6, at: 0)],
            cursors: ["wh_a": 7, "wh_gone": 9, "wh_c": 2, "\u{E9}": 6], at: 50)
        #expect(ids(created) == [1, 2, 3, 4, 5])
        #expect(created.map(\.subscriptionID) == ["wh_a", "wh_a", "wh_b", "wh_a", "\u{E9}"])
        #expect(created.allSatisfy { $0.status == .pending && $0.attempts.isEmpty && $0.createdAt == 50 && $0.updatedAt == 50 })
        #expect(created[3].payload == [] && created[0].payload == [0x7B, 0x7D] && created[1].nextAttemptAt == 90)
        #expect(try outbox.enqueueDeliveries([], cursors: [:], at: 60).isEmpty)
        all = try outbox.subscriptions()
        #expect(all.map(\.cursor) == [5, 7, 0, 2, 3, 6])
        #expect(try outbox.delivery(id: 1) == created[0])
        #expect(try outbox.deliveries(subscriptionID: "e\u{301}", status: nil, limit: 10, beforeID: nil).isEmpty)
        #expect(try ids(outbox.deliveries(subscriptionID: "\u{E9}", status: nil, limit: 10, beforeID: nil)) == [5])
        note(created)

        // Due: by next attempt time then id; excluded ones skipped without hiding others; the limit.
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 95, excluding: [], limit: 10)) == [2])
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 100, excluding: [], limit: 10)) == [2, 1, 4])
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 100, excluding: [2], limit: 1)) == [1])
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 100, excluding: [1, 2, 3], limit: 5)) == [4])
        #expect(try outbox.dueDeliveries(subscriptionID: "wh_a", now: 100, excluding: [], limit: 0).isEmpty)
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_b", now: 1_000, excluding: [], limit: 10)) == [3])
        #expect(try outbox.dueDeliveries(subscriptionID: "wh_nobody", now: 1_000, excluding: [], limit: 10).isEmpty)

        // Attempts: statuses, the log, next attempt times; an unknown id is ignored.
        try outbox.recordAttempts([
            WebhookAttemptResult(deliveryID: 1, attempt: failure, status: .pending, nextAttemptAt: 400),
            WebhookAttemptResult(deliveryID: 2, attempt: success, status: .succeeded, nextAttemptAt: nil),
            WebhookAttemptResult(deliveryID: 4, attempt: failure, status: .failed, nextAttemptAt: nil),
            WebhookAttemptResult(deliveryID: 999, attempt: failure, status: .failed, nextAttemptAt: nil),
        ], at: 150)
        let first = try #require(try outbox.delivery(id: 1))
        #expect(first.status == .pending && first.attempts == [failure] && first.nextAttemptAt == 400)
        #expect(first.updatedAt == 150 && first.createdAt == 50)
        #expect(try outbox.delivery(id: 2)?.status == .succeeded)
        #expect(try outbox.delivery(id: 2)?.nextAttemptAt == nil)
        #expect(try outbox.delivery(id: 4)?.attempts == [failure])
        #expect(try outbox.delivery(id: 999) == nil)
        #expect(try outbox.retryingDeliveryCount() == 1)
        #expect(try outbox.dueDeliveries(subscriptionID: "wh_a", now: 399, excluding: [], limit: 10).isEmpty)

        let later = try outbox.enqueueDeliveries(
            [new("wh_a", event: 7, at: 300), new("wh_a", event: 8, at: 300)], cursors: ["wh_a": 8], at: 160)
        #expect(ids(later) == [6, 7])
        try outbox.recordAttempts(
            [WebhookAttemptResult(deliveryID: 6, attempt: refused, status: .pending, nextAttemptAt: 250)], at: 170)
        #expect(try outbox.retryingDeliveryCount() == 2)
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 1_000, excluding: [], limit: 10)) == [6, 7, 1])
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 1_000, excluding: [6], limit: 2)) == [7, 1])
        // Pending with no next attempt time: never due, still a retry.
        try outbox.recordAttempts(
            [WebhookAttemptResult(deliveryID: 7, attempt: refused, status: .pending, nextAttemptAt: nil)], at: 180)
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: .max, excluding: [], limit: 10)) == [6, 1])
        #expect(try outbox.retryingDeliveryCount() == 3)
        // Two results for one delivery in one call: both appended, the last status wins.
        try outbox.recordAttempts([
            WebhookAttemptResult(deliveryID: 1, attempt: failure, status: .pending, nextAttemptAt: 450),
            WebhookAttemptResult(deliveryID: 1, attempt: success, status: .succeeded, nextAttemptAt: nil),
        ], at: 500)
        #expect(try outbox.delivery(id: 1)?.attempts == [failure, failure, success])
        #expect(try outbox.delivery(id: 1)?.status == .succeeded)
        #expect(try outbox.retryingDeliveryCount() == 2)
        #expect(try ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 1_000, excluding: [], limit: 10)) == [6])

        // Listing: newest first, by status, paged with beforeID.
        func page(_ status: WebhookDeliveryStatus?, _ limit: Int, _ before: Int64?) throws -> [Int64] {
            try ids(outbox.deliveries(subscriptionID: "wh_a", status: status, limit: limit, beforeID: before))
        }
        #expect(try page(nil, 10, nil) == [7, 6, 4, 2, 1])
        #expect(try page(nil, 2, nil) == [7, 6])
        #expect(try page(nil, 2, 6) == [4, 2])
        #expect(try page(nil, 2, 2) == [1])
        #expect(try page(nil, 2, 1) == [])
        #expect(try page(.pending, 10, nil) == [7, 6])
        #expect(try page(.succeeded, 10, nil) == [2, 1])
        #expect(try page(.succeeded, 1, 2) == [1])
        #expect(try page(.failed, 10, nil) == [4])
        #expect(try page(nil, 0, nil) == [])
        note(try outbox.deliveries(subscriptionID: "wh_a", status: nil, limit: 10, beforeID: nil))

        // Pruning: finished ones last updated before the cutoff (strictly), never pending ones.
        #expect(try outbox.pruneDeliveries(finishedBefore: 150) == 0)
        #expect(try outbox.pruneDeliveries(finishedBefore: 151) == 2)
        #expect(try outbox.delivery(id: 2) == nil && outbox.delivery(id: 4) == nil)
        #expect(try page(nil, 10, nil) == [7, 6, 1])
        #expect(try outbox.pruneDeliveries(finishedBefore: .max) == 1)
        #expect(try page(nil, 10, nil) == [7, 6])
        #expect(try outbox.retryingDeliveryCount() == 2)

        // Clamping cursors beyond the log's newest id.
        #expect(try outbox.clampSubscriptionCursors(to: 5) == 2)
        #expect(try outbox.subscriptions().map(\.cursor) == [5, 5, 0, 2, 3, 5])
        #expect(try outbox.clampSubscriptionCursors(to: 5) == 0)

        // Deleting a subscription deletes its deliveries; a later enqueue for it creates none; ids never reused.
        #expect(try outbox.deleteSubscription(id: "wh_b") == true)
        #expect(try outbox.delivery(id: 3) == nil)
        #expect(try outbox.deleteSubscription(id: "wh_b") == false)
        #expect(try outbox.enqueueDeliveries([new("wh_b", event: 9, at: 0)], cursors: ["wh_b": 9], at: 600).isEmpty)
        try outbox.saveSubscription(subscription("wh_b", createdAt: 40), cursor: 3)
        #expect(try outbox.subscriptions().last?.subscription.id == "wh_b")
        #expect(try outbox.subscriptions().last?.cursor == 3)
        #expect(try outbox.deliveries(subscriptionID: "wh_b", status: nil, limit: 10, beforeID: nil).isEmpty)
        #expect(try ids(outbox.enqueueDeliveries([new("wh_b", event: 10, at: 0)], cursors: [:], at: 610)) == [8])
        #expect(try outbox.deleteSubscription(id: "wh_b") == true)
        #expect(try ids(outbox.enqueueDeliveries([new("wh_a", event: 11, at: 0)], cursors: [:], at: 620)) == [9])
        #expect(try outbox.retryingDeliveryCount() == 2)
        #expect(try outbox.deleteSubscription(id: "wh_a") == true)
        #expect(try outbox.retryingDeliveryCount() == 0)
        #expect(try outbox.delivery(id: 6) == nil)
        note(try outbox.subscriptions().map { "\($0.subscription.id) \($0.cursor)" })

        // Closed: calls that would touch the store fail with `closed`; the ones with nothing to do do not.
        outbox.close()
        #expect(closedCode { _ = try outbox.subscriptions() } == .closed)
        #expect(closedCode { _ = try outbox.delivery(id: 5) } == .closed)
        #expect(closedCode { try outbox.saveSubscription(subscription("wh_x", createdAt: 0), cursor: 0) } == .closed)
        #expect(closedCode { _ = try outbox.enqueueDeliveries([new("\u{E9}", event: 12, at: 0)], cursors: [:], at: 0) } == .closed)
        #expect(closedCode { _ = try outbox.retryingDeliveryCount() } == .closed)
        #expect(closedCode { _ = try outbox.clampSubscriptionCursors(to: 0) } == .closed)
        #expect(closedCode { _ = try outbox.pruneDeliveries(finishedBefore: 0) } == .closed)
        #expect(try outbox.enqueueDeliveries([], cursors: [:], at: 0).isEmpty)
        #expect(try outbox.dueDeliveries(subscriptionID: "\u{E9}", now: 0, excluding: [], limit: 0).isEmpty)
        try outbox.recordAttempts([], at: 0)
        outbox.close()
        return answers
    }

    @Test func answersAsSQLiteDoes() throws {
        let directory = try TemporaryDirectory()
        let sqlite = try SQLiteStore(path: directory.file("webhooks.sqlite"))
        defer { sqlite.close() }
        let fromSQLite = try Self.scenario(sqlite)
        let memory = MemoryOutbox()
        let fromMemory = try Self.scenario(memory)
        #expect(fromSQLite.count == 4)
        #expect(fromMemory.map { Array($0.utf8) } == fromSQLite.map { Array($0.utf8) })
        #expect(memory.droppedDeliveries == 0)
    }

    /// Over `maxDeliveries`, the deliveries that finished longest ago go first; pending ones are never dropped.
    @Test func dropsTheOldestFinishedOverTheBound() throws {
        let outbox = MemoryOutbox(maxDeliveries: 3)
        try outbox.saveSubscription(Self.subscription("wh_a", createdAt: 1), cursor: 0)
        let created = try outbox.enqueueDeliveries((1...3).map { Self.new("wh_a", event: $0, at: 10) }, cursors: [:], at: 5)
        #expect(Self.ids(created) == [1, 2, 3])
        // 2 finishes before 1: it is the older finished one.
        try outbox.recordAttempts(
            [WebhookAttemptResult(deliveryID: 2, attempt: Self.failure, status: .failed, nextAttemptAt: nil)], at: 20)
        try outbox.recordAttempts(
            [WebhookAttemptResult(deliveryID: 1, attempt: Self.success, status: .succeeded, nextAttemptAt: nil)], at: 30)
        #expect(outbox.droppedDeliveries == 0 && outbox.deliveryCount == 3)

        #expect(try Self.ids(outbox.enqueueDeliveries([Self.new("wh_a", event: 4, at: 10)], cursors: [:], at: 40)) == [4])
        #expect(outbox.droppedDeliveries == 1 && outbox.deliveryCount == 3)
        #expect(try outbox.delivery(id: 2) == nil)
        #expect(try outbox.delivery(id: 1)?.status == .succeeded)

        // Two more: 1 goes, then only pending ones are left and the outbox stays above its bound.
        let more = try outbox.enqueueDeliveries((5...6).map { Self.new("wh_a", event: $0, at: 10) }, cursors: [:], at: 50)
        #expect(Self.ids(more) == [5, 6])
        #expect(outbox.droppedDeliveries == 2 && outbox.deliveryCount == 4)
        #expect(try outbox.delivery(id: 1) == nil)
        #expect(try Self.ids(outbox.deliveries(subscriptionID: "wh_a", status: nil, limit: 10, beforeID: nil)) == [6, 5, 4, 3])
        #expect(try Self.ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 10, excluding: [], limit: 10)) == [3, 4, 5, 6])

        // A retry stays; a delivery that finishes while the outbox is over its bound goes at once.
        try outbox.recordAttempts([
            WebhookAttemptResult(deliveryID: 3, attempt: Self.failure, status: .pending, nextAttemptAt: 100),
            WebhookAttemptResult(deliveryID: 4, attempt: Self.success, status: .succeeded, nextAttemptAt: nil),
        ], at: 60)
        #expect(outbox.droppedDeliveries == 3 && outbox.deliveryCount == 3)
        #expect(try outbox.delivery(id: 4) == nil)
        #expect(try outbox.delivery(id: 3)?.attempts == [Self.failure])
        #expect(try outbox.retryingDeliveryCount() == 1)
        #expect(try Self.ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 100, excluding: [], limit: 10)) == [5, 6, 3])
        // Prunes and deletions are not drops.
        #expect(try outbox.pruneDeliveries(finishedBefore: .max) == 0)
        #expect(try outbox.deleteSubscription(id: "wh_a"))
        #expect(outbox.droppedDeliveries == 3 && outbox.deliveryCount == 0)
        #expect(try outbox.retryingDeliveryCount() == 0)
    }

    /// Many drops over a long run: listings skip the dropped ones (their ids are removed in bulk), the
    /// retry waiting since the start stays, and the count stays at the bound.
    @Test func keepsTheBoundOverALongRun() throws {
        let outbox = MemoryOutbox(maxDeliveries: 10)
        try outbox.saveSubscription(Self.subscription("wh_a", createdAt: 1), cursor: 0)
        for event: Int64 in 1...300 {
            let id = try #require(try outbox.enqueueDeliveries([Self.new("wh_a", event: event, at: 0)], cursors: [:], at: event).first?.id)
            #expect(id == event)
            let retry = id == 1
            try outbox.recordAttempts([WebhookAttemptResult(
                deliveryID: id, attempt: retry ? Self.failure : Self.success, status: retry ? .pending : .succeeded,
                nextAttemptAt: retry ? 10_000 : nil)], at: event)
            #expect(outbox.deliveryCount <= 10)
        }
        #expect(outbox.droppedDeliveries == 290)
        let kept = try Self.ids(outbox.deliveries(subscriptionID: "wh_a", status: nil, limit: 100, beforeID: nil))
        #expect(kept == Array(292...300).reversed() + [1])
        #expect(try Self.ids(outbox.deliveries(subscriptionID: "wh_a", status: nil, limit: 3, beforeID: 295)) == [294, 293, 292])
        #expect(try Self.ids(outbox.deliveries(subscriptionID: "wh_a", status: .pending, limit: 3, beforeID: nil)) == [1])
        #expect(try Self.ids(outbox.dueDeliveries(subscriptionID: "wh_a", now: 10_000, excluding: [], limit: 5)) == [1])
        #expect(try outbox.retryingDeliveryCount() == 1)
        #expect(try outbox.pruneDeliveries(finishedBefore: .max) == 9)
        #expect(try Self.ids(outbox.deliveries(subscriptionID: "wh_a", status: nil, limit: 100, beforeID: nil)) == [1])
    }

    /// Finished deliveries attempted again (a replay) take their new place in the drop order.
    @Test func aDeliveryFinishedAgainIsDroppedByItsLatestFinish() throws {
        let outbox = MemoryOutbox(maxDeliveries: 2)
        try outbox.saveSubscription(Self.subscription("wh_a", createdAt: 1), cursor: 0)
        _ = try outbox.enqueueDeliveries((1...2).map { Self.new("wh_a", event: $0, at: 10) }, cursors: [:], at: 5)
        for id: Int64 in [1, 2, 1] {
            try outbox.recordAttempts(
                [WebhookAttemptResult(deliveryID: id, attempt: Self.success, status: .succeeded, nextAttemptAt: nil)], at: 20)
        }
        _ = try outbox.enqueueDeliveries([Self.new("wh_a", event: 3, at: 10)], cursors: [:], at: 30)
        #expect(outbox.droppedDeliveries == 1)
        #expect(try outbox.delivery(id: 2) == nil)
        #expect(try outbox.delivery(id: 1)?.attempts.count == 2)
    }

    /// Memory has no commits, no file: the observer is kept but never called, the health always healthy.
    @Test func hasNoCommitsAndIsAlwaysHealthy() throws {
        let outbox = MemoryOutbox()
        let calls = Locked(0)
        outbox.observeCommits { _ in calls.withLock { $0 += 1 } }
        try outbox.saveSubscription(Self.subscription("wh_a", createdAt: 1), cursor: 0)
        _ = try outbox.enqueueDeliveries([Self.new("wh_a", event: 1, at: 0)], cursors: ["wh_a": 1], at: 1)
        #expect(calls.withLock { $0 } == 0)
        #expect(outbox.health == .healthy)
        #expect(!outbox.isClosed)
        outbox.close()
        #expect(outbox.isClosed && outbox.health == .healthy)
    }

    /// Calls from many threads at once: every delivery gets a distinct id and every one is recorded.
    @Test func isSafeFromManyThreads() async throws {
        let outbox = MemoryOutbox()
        for index in 0..<4 { try outbox.saveSubscription(Self.subscription("wh_\(index)", createdAt: 1), cursor: 0) }
        try await withThrowingTaskGroup(of: [Int64].self) { group in
            for index in 0..<4 {
                group.addTask {
                    var ids: [Int64] = []
                    for event in 1...250 {
                        let created = try outbox.enqueueDeliveries(
                            [Self.new("wh_\(index)", event: Int64(event), at: 0)], cursors: ["wh_\(index)": Int64(event)], at: 1)
                        ids += Self.ids(created)
                        let due = try outbox.dueDeliveries(subscriptionID: "wh_\(index)", now: 1, excluding: [], limit: 1)
                        try outbox.recordAttempts(due.map {
                            WebhookAttemptResult(deliveryID: $0.id, attempt: Self.success, status: .succeeded, nextAttemptAt: nil)
                        }, at: 2)
                    }
                    return ids
                }
            }
            var all: [Int64] = []
            for try await ids in group { all += ids }
            #expect(all.sorted() == Array(1...1_000))
        }
        #expect(try outbox.subscriptions().map(\.cursor) == [250, 250, 250, 250])
        #expect(try outbox.pruneDeliveries(finishedBefore: 3) == 1_000)
        #expect(outbox.deliveryCount == 0)
    }

    /// The sorted key array (with its consumed front) against a plain sorted array, over random edits.
    @Test func sortedKeysStayInOrder() {
        var keys = SortedKeys<Int>()
        var reference: [Int] = []
        var random = SeededGenerator(seed: 42)
        for step in 0..<20_000 {
            let key = Int(random.next() % 3_000)
            if random.next() % 3 == 0 || reference.isEmpty {
                keys.insert(key)
                if !reference.contains(key) { reference.append(key); reference.sort() }
            } else {
                let victim = step % 2 == 0 ? reference[Int(random.next() % UInt64(min(reference.count, 8)))] : key
                let removed = keys.remove(victim)
                #expect(removed == reference.contains(victim))
                reference.removeAll { $0 == victim }
            }
            if step % 97 == 0 {
                #expect(Array(keys.ascending) == reference)
                let bound = Int(random.next() % 3_000)
                #expect(Array(keys.descending(below: bound)) == reference.filter { $0 < bound }.reversed())
            }
        }
        #expect(Array(keys.ascending) == reference)
        #expect(keys.count == reference.count)
        keys.removeAll { $0 % 2 == 0 }
        #expect(Array(keys.ascending) == reference.filter { $0 % 2 != 0 })
    }
}
