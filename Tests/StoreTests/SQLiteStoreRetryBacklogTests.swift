// APNs Sandbox — the webhook retry backlog count and the partial index it reads (schema version 6).
import Events
import Sandbox
@testable import Store
import Testing

@Suite struct SQLiteStoreRetryBacklogTests {
    private func indexNames(_ store: SQLiteStore) throws -> [String] {
        try store.read { connection in
            try connection.withStatement(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_deliveries' AND sql IS NOT NULL ORDER BY name"
            ) { statement in
                var names: [String] = []
                while try statement.step() { names.append(statement.string(at: 0) ?? "") }
                return names
            }
        }
    }

    /// The backlog counts pending deliveries after a failed attempt only, and SQLite answers it from the
    /// partial index (no scan of the outbox's rows).
    @Test func countsRetriesFromThePartialIndex() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("outbox.sqlite"))
        defer { store.close() }
        try store.saveSubscription(
            WebhookSubscription(id: "wh_1", url: "http://127.0.0.1:9/", secret: "whsec_x", createdAt: 5), cursor: 0)
        let created = try store.enqueueDeliveries((1...3).map {
            NewWebhookDelivery(subscriptionID: "wh_1", eventID: $0, messageID: "evt_\($0)", eventType: "push.accepted",
                               payload: [0x7B, 0x7D], nextAttemptAt: 100)
        }, cursors: ["wh_1": 3], at: 50)
        #expect(try store.retryingDeliveryCount() == 0, "pending, never attempted")
        let failed = WebhookAttempt(at: 150, statusCode: 500, durationMs: 1, error: "HTTP 500")
        try store.recordAttempts([
            WebhookAttemptResult(deliveryID: created[0].id, attempt: failed, status: .pending, nextAttemptAt: 400),
            WebhookAttemptResult(deliveryID: created[1].id, attempt: failed, status: .pending, nextAttemptAt: 400),
            WebhookAttemptResult(deliveryID: created[2].id, attempt: failed, status: .failed, nextAttemptAt: nil),
        ], at: 151)
        #expect(try store.retryingDeliveryCount() == 2)
        let ok = WebhookAttempt(at: 400, statusCode: 204, durationMs: 1, error: nil)
        try store.recordAttempts(
            [WebhookAttemptResult(deliveryID: created[0].id, attempt: ok, status: .succeeded, nextAttemptAt: nil)], at: 401)
        #expect(try store.retryingDeliveryCount() == 1)

        let plan = try store.read { connection in
            try connection.withStatement(
                "EXPLAIN QUERY PLAN SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND attempts > 0"
            ) { statement in
                var details: [String] = []
                while try statement.step() { details.append(statement.string(at: 3) ?? "") }
                return details.joined(separator: "; ")
            }
        }
        #expect(plan.contains("webhook_deliveries_retrying"), "\(plan)")
    }

    /// A file at schema version 5 gets the index when it is opened (and reopening changes nothing).
    @Test func addsTheIndexToAVersion5File() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v5.sqlite")
        do {
            let connection = try SQLiteConnection(path: path, readOnly: false)
            try connection.execute("CREATE TABLE schema_version(version INTEGER NOT NULL)")
            for migration in Schema.migrations where migration.version <= 5 {
                for statement in migration.statements { try connection.execute(statement) }
            }
            try connection.execute("INSERT INTO schema_version(version) VALUES (5)")
            connection.close()
        }
        for _ in 0..<2 {
            let store = try SQLiteStore(path: path)
            #expect(try indexNames(store) == [
                "webhook_deliveries_due", "webhook_deliveries_retrying", "webhook_deliveries_subscription",
            ])
            #expect(try store.retryingDeliveryCount() == 0)
            store.close()
        }
        #expect(Schema.latestVersion >= 6)
    }
}
