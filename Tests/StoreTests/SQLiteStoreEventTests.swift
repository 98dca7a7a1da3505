// APNs Sandbox — the event log and the webhook outbox in the SQLite store.
import Events
import Foundation
import Sandbox
@testable import Store
import Synchronization
import Testing
import Support

@Suite struct SQLiteStoreEventTests {
    let directory: TemporaryDirectory
    let store: SQLiteStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.file("store.sqlite"))
    }

    private func draft(_ type: SandboxEventType, device: String? = nil, topic: String? = nil, time: Int64 = 1_000) -> EventDraft {
        EventDraft(type: type, time: time, deviceToken: device, topic: topic, data: Array(#"{"n":1}"#.utf8))
    }

    private func save(_ records: [NotificationRecord], events: [EventDraft]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            store.save(records, events: events) { continuation.resume(with: $0) }
        }
    }

    private func append(_ drafts: [EventDraft]) async throws -> [SandboxEvent] {
        try await withCheckedThrowingContinuation { continuation in
            store.appendEvents(drafts) { continuation.resume(with: $0) }
        }
    }

    /// Events saved with records and on their own get increasing ids, reach the observer after their
    /// commit in id order, and read back by id and filter.
    @Test func logsEventsInCommitOrder() async throws {
        let observed = Locked<[Int64]>([])
        store.observeEvents { events in observed.withLock { $0 += events.map(\.id) } }
        try await save([sampleRecord()], events: [draft(.pushAccepted, device: "aa", topic: "t1")])
        let appended = try await append([draft(.pushRejected, topic: "t2"), draft(.deviceUpdated, device: "bb")])
        try await save([sampleRecord(status: .displayed)], events: [draft(.notificationDisplayed, device: "aa", topic: "t1")])
        #expect(appended.map(\.id) == [2, 3])
        #expect(observed.withLock { $0 } == [1, 2, 3, 4])
        #expect(try store.latestEventID() == 4)
        #expect(try store.oldestEventID() == 1)
        let all = try store.events(after: 0, matching: EventFilter(), limit: 10)
        #expect(all.map(\.type) == [.pushAccepted, .pushRejected, .deviceUpdated, .notificationDisplayed])
        #expect(all[0].data == Array(#"{"n":1}"#.utf8))
        #expect(try store.events(after: 2, matching: EventFilter(), limit: 1).map(\.id) == [3])
        #expect(try store.events(after: 0, matching: EventFilter(deviceTokens: ["aa"]), limit: 10).map(\.id) == [1, 4])
        #expect(try store.events(after: 0, matching: EventFilter(types: [.pushRejected, .deviceUpdated], topics: ["t2"]), limit: 10).map(\.id) == [2])
    }

    /// A failed save logs none of its events (they share the transaction).
    @Test func eventsRollBackWithTheirRecords() async throws {
        var bad = sampleRecord()
        bad.apnsID = ""
        try await store.save([sampleRecord()])
        // A NOT NULL violation: the row and its event are rolled back together.
        try store.write { connection in try connection.execute("CREATE TRIGGER refuse BEFORE INSERT ON notifications WHEN new.apns_id = '' BEGIN SELECT RAISE(ABORT, 'refused'); END") }
        await #expect(throws: (any Error).self) { try await save([bad], events: [draft(.pushAccepted)]) }
        #expect(try store.latestEventID() == 0)
    }

    /// Pruning drops old events and all but the newest N; ids are never reused afterwards.
    @Test func prunesByAgeAndCount() async throws {
        _ = try await append((0..<10).map { draft(.deviceUpdated, time: Int64($0)) })
        #expect(try store.pruneEvents(maxEvents: -1, olderThan: 3) == 3)
        #expect(try store.pruneEvents(maxEvents: 4, olderThan: 0) == 3)
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 100).map(\.id) == [7, 8, 9, 10])
        let next = try await append([draft(.deviceUpdated)])
        #expect(next.map(\.id) == [11])
    }

    /// The age pass with a webhook cursor among old events (a subscription behind) deletes the old events up to it and
    /// keeps the rest; with the cursor past them, every old event goes (each pass finds them along another index).
    @Test func prunesByAgeUpToALaggingCursor() async throws {
        let total = SQLiteStore.pruneChunk * 2 + 50
        _ = try await append((0..<total).map { draft(.deviceUpdated, time: Int64($0)) })
        // Old: times below total - 100 (ids 1…total-100); the cursor at id 1,500 holds back what is above it.
        #expect(try store.pruneEvents(maxEvents: -1, olderThan: Int64(total - 100), keepingAbove: 1500) == 1500)
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 1).first?.id == 1501)
        #expect(try store.pruneEvents(maxEvents: -1, olderThan: Int64(total - 100), keepingAbove: .max) == total - 100 - 1500)
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 1).first?.id == Int64(total - 99))
        #expect(try store.pruneEvents(maxEvents: -1, olderThan: Int64(total - 100), keepingAbove: .max) == 0)
    }

    /// Subscriptions keep their cursor across saves; deliveries go pending → attempts → final, in the log.
    @Test func webhookOutbox() throws {
        let subscription = WebhookSubscription(id: "wh_1", url: "http://127.0.0.1:9/", secret: "whsec_x", createdAt: 5)
        try store.saveSubscription(subscription, cursor: 7)
        var renamed = subscription
        renamed.description = "renamed"
        try store.saveSubscription(renamed, cursor: 99)
        #expect(try store.subscriptions().map(\.cursor) == [7])
        #expect(try store.subscriptions().first?.subscription == renamed)
        // An update changes the record and keeps the cursor; one for a deleted subscription creates nothing.
        var rotated = renamed
        rotated.secret = "whsec_y"
        #expect(try store.updateSubscription(rotated))
        #expect(try store.subscriptions().first?.subscription.secret == "whsec_y")
        #expect(try store.subscriptions().map(\.cursor) == [7])
        var ghost = rotated
        ghost.id = "wh_gone"
        #expect(try !store.updateSubscription(ghost))
        #expect(try store.subscriptions().count == 1)
        try store.saveSubscription(renamed, cursor: 7)

        let created = try store.enqueueDeliveries([
            NewWebhookDelivery(subscriptionID: "wh_1", eventID: 8, messageID: "evt_8", eventType: "push.accepted", payload: [0x7B, 0x7D], nextAttemptAt: 100),
            NewWebhookDelivery(subscriptionID: "wh_1", eventID: 9, messageID: "evt_9", eventType: "push.accepted", payload: [0x7B, 0x7D], nextAttemptAt: 200),
        ], cursors: ["wh_1": 9], at: 50)
        #expect(created.map(\.createdAt) == [50, 50] && created.map(\.updatedAt) == [50, 50], "the clock's time, not the system's")
        #expect(try store.subscriptions().first?.cursor == 9)
        #expect(try store.dueDeliveries(subscriptionID: "wh_1", now: 150, excluding: [], limit: 10).map(\.messageID) == ["evt_8"])
        #expect(try store.dueDeliveries(subscriptionID: "wh_1", now: 250, excluding: [created[0].id], limit: 10).map(\.messageID) == ["evt_9"])

        let failed = WebhookAttempt(at: 150, statusCode: 500, durationMs: 1.5, error: "HTTP 500")
        try store.recordAttempts([WebhookAttemptResult(deliveryID: created[0].id, attempt: failed, status: .pending, nextAttemptAt: 400)], at: 151)
        #expect(try store.dueDeliveries(subscriptionID: "wh_1", now: 300, excluding: [], limit: 10).map(\.messageID) == ["evt_9"])
        let ok = WebhookAttempt(at: 400, statusCode: 204, durationMs: 2, error: nil)
        try store.recordAttempts([WebhookAttemptResult(deliveryID: created[0].id, attempt: ok, status: .succeeded, nextAttemptAt: nil)], at: 401)
        let delivery = try #require(try store.delivery(id: created[0].id))
        #expect(delivery.status == .succeeded && delivery.attempts == [failed, ok] && delivery.nextAttemptAt == nil)
        #expect(try store.deliveries(subscriptionID: "wh_1", status: nil, limit: 10, beforeID: nil).map(\.eventID) == [9, 8])
        #expect(try store.deliveries(subscriptionID: "wh_1", status: .succeeded, limit: 10, beforeID: nil).map(\.eventID) == [8])
        #expect(try store.pruneDeliveries(finishedBefore: Int64.max) == 1)
        #expect(try store.deleteSubscription(id: "wh_1"))
        #expect(try store.deliveries(subscriptionID: "wh_1", status: nil, limit: 10, beforeID: nil).isEmpty)
    }
}

@Suite struct SQLiteStoreBatchedTaskTests {
    /// A batched task's writes commit with the group; a failing one rolls back only itself, while saves
    /// queued around it still commit.
    @Test func batchedTasksCommitWithTheGroupAndFailAlone() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("store.sqlite"))
        let value = try store.writeInGroupCommit { connection in
            try connection.execute("CREATE TABLE scratch(x INTEGER)")
            try connection.execute("INSERT INTO scratch VALUES (1)")
            return 42
        }
        #expect(value == 42)
        struct Refused: Error {}
        let records = (0..<20).map { sampleRecord(apnsID: "r\($0)") }
        async let saves: Void = withThrowingTaskGroup(of: Void.self) { group in
            for record in records {
                group.addTask { try await store.save([record]) }
            }
            try await group.waitForAll()
        }
        #expect(throws: Refused.self) {
            try store.writeInGroupCommit { connection -> Int in
                try connection.execute("INSERT INTO scratch VALUES (2)")
                throw Refused()
            }
        }
        try await saves
        #expect(try store.count(matching: NotificationFilter()) == 20)
        let rows = try store.read { connection in
            try connection.withStatement("SELECT group_concat(x) FROM scratch") { statement in
                try statement.step() ? statement.string(at: 0) : nil
            }
        }
        #expect(rows == "1")
    }
}
