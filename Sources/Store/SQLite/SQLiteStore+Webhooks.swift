// APNs Sandbox — SQLiteStore as the webhook outbox: subscriptions, deliveries and their attempts.
import APNsProtocol
import Events
import Foundation
import Sandbox
import Support

/// Subscriptions are JSON rows; deliveries keep their attempt log as a JSON array. All writes are
/// synchronous, made by the webhook dispatcher (never the push path); the frequent ones (new deliveries,
/// attempt results) join the next group commit instead of adding a commit and an fsync of their own.
extension SQLiteStore: WebhookRepository {
    public func saveSubscription(_ subscription: WebhookSubscription, cursor: Int64) throws {
        let json = try Self.encodeJSON(subscription)
        try write { connection in
            try connection.withStatement(
                """
                INSERT INTO webhook_subscriptions(id, record, cursor, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET record = excluded.record
                """
            ) { statement in
                try statement.bind(subscription.id, at: 1)
                try statement.bind(json, at: 2)
                try statement.bind(cursor, at: 3)
                try statement.bind(subscription.createdAt, at: 4)
                try statement.step()
            }
        }
    }

    public func updateSubscription(_ subscription: WebhookSubscription) throws -> Bool {
        let json = try Self.encodeJSON(subscription)
        return try write { connection in
            try connection.withStatement("UPDATE webhook_subscriptions SET record = ? WHERE id = ?") { statement in
                try statement.bind(json, at: 1)
                try statement.bind(subscription.id, at: 2)
                try statement.step()
                return connection.changes > 0
            }
        }
    }

    public func subscriptions() throws -> [(subscription: WebhookSubscription, cursor: Int64)] {
        try read { connection in
            try connection.withStatement(
                "SELECT record, cursor FROM webhook_subscriptions ORDER BY created_at, id"
            ) { statement in
                var result: [(subscription: WebhookSubscription, cursor: Int64)] = []
                while try statement.step() {
                    let subscription = try Self.decodeJSON(WebhookSubscription.self, statement.bytes(at: 0))
                    result.append((subscription, statement.int64(at: 1)))
                }
                return result
            }
        }
    }

    /// Moves every subscription cursor beyond `latest` (the event log's newest id) back to it.
    ///
    /// A cursor beyond the log means the log was replaced while the outbox was kept (a new main
    /// store, or a damaged one moved aside): the subscription would otherwise skip every new event
    /// until the new ids caught up with its old cursor.
    /// - Returns: How many cursors moved.
    @discardableResult
    public func clampSubscriptionCursors(to latest: Int64) throws -> Int {
        try write { connection in
            try connection.withStatement("UPDATE webhook_subscriptions SET cursor = ?1 WHERE cursor > ?1") { statement in
                try statement.bind(latest, at: 1)
                try statement.step()
                return connection.changes
            }
        }
    }

    @discardableResult
    public func deleteSubscription(id: String) throws -> Bool {
        try write { connection in
            try connection.withStatement("DELETE FROM webhook_deliveries WHERE subscription_id = ?") { statement in
                try statement.bind(id, at: 1)
                try statement.step()
            }
            return try connection.withStatement("DELETE FROM webhook_subscriptions WHERE id = ?") { statement in
                try statement.bind(id, at: 1)
                try statement.step()
                return connection.changes > 0
            }
        }
    }

    public func enqueueDeliveries(
        _ deliveries: [NewWebhookDelivery], cursors: [String: Int64], at now: Int64
    ) throws -> [WebhookDelivery] {
        guard !deliveries.isEmpty || !cursors.isEmpty else { return [] }
        return try writeInGroupCommit { connection in
            let created = try connection.withStatement(
                """
                INSERT INTO webhook_deliveries(subscription_id, event_id, message_id, event_type, payload, status,
                    attempts, next_attempt_at, created_at, updated_at, log)
                SELECT ?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?7, ?8, '[]'
                WHERE EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = ?1)
                """
            ) { statement in
                // A subscription deleted meanwhile gets no deliveries (nothing would ever remove them).
                try deliveries.compactMap { new -> WebhookDelivery? in
                    try statement.bind(new.subscriptionID, at: 1)
                    try statement.bind(new.eventID, at: 2)
                    try statement.bind(new.messageID, at: 3)
                    try statement.bind(new.eventType, at: 4)
                    try statement.bind(new.payload, at: 5)
                    try statement.bind(new.nextAttemptAt, at: 6)
                    try statement.bind(now, at: 7)
                    try statement.bind(now, at: 8)
                    try statement.step()
                    statement.resetForNextRow()
                    guard connection.changes == 1 else { return nil }
                    return WebhookDelivery(
                        id: connection.lastInsertRowID, subscriptionID: new.subscriptionID, eventID: new.eventID,
                        messageID: new.messageID, eventType: new.eventType, payload: new.payload, status: .pending,
                        nextAttemptAt: new.nextAttemptAt, createdAt: now, updatedAt: now)
                }
            }
            try connection.withStatement(
                "UPDATE webhook_subscriptions SET cursor = max(cursor, ?) WHERE id = ?"
            ) { statement in
                for (id, cursor) in cursors {
                    try statement.bind(cursor, at: 1)
                    try statement.bind(id, at: 2)
                    try statement.step()
                    statement.resetForNextRow()
                }
            }
            return created
        }
    }

    private static let deliveryColumns = """
        id, subscription_id, event_id, message_id, event_type, payload, status, next_attempt_at, created_at,
        updated_at, log
        """

    public func dueDeliveries(
        subscriptionID: String, now: Int64, excluding: Set<Int64>, limit: Int
    ) throws -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        // Over-fetch by the excluded count so in-flight rows do not hide due ones.
        let fetch = limit + excluding.count
        let rows = try read { connection in
            try connection.withStatement(
                """
                SELECT \(Self.deliveryColumns) FROM webhook_deliveries
                WHERE status = 'pending' AND next_attempt_at <= ? AND subscription_id = ?
                ORDER BY next_attempt_at, id LIMIT ?
                """
            ) { statement in
                try statement.bind(now, at: 1)
                try statement.bind(subscriptionID, at: 2)
                try statement.bind(fetch, at: 3)
                return try Self.decodeDeliveries(statement)
            }
        }
        return Array(rows.lazy.filter { !excluding.contains($0.id) }.prefix(limit))
    }

    public func recordAttempts(_ results: [WebhookAttemptResult], at now: Int64) throws {
        guard !results.isEmpty else { return }
        // JSONWriter, not JSONEncoder: this runs for every attempt. Same keys as WebhookAttempt's Codable.
        let encoded = results.map { result in
            var writer = JSONWriter(reservingCapacity: 96)
            writer.member("at", result.attempt.at)
            writer.member("statusCode", result.attempt.statusCode)
            writer.member("durationMs", result.attempt.durationMs)
            writer.member("error", result.attempt.error)
            return (result, writer.finish())
        }
        try writeInGroupCommit { connection in
            try connection.withStatement(
                """
                UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?,
                    updated_at = ?, log = json_insert(log, '$[#]', json(?))
                WHERE id = ?
                """
            ) { statement in
                for (result, attempt) in encoded {
                    try statement.bind(result.status.rawValue, at: 1)
                    if let next = result.nextAttemptAt {
                        try statement.bind(next, at: 2)
                    } else {
                        try statement.bindNull(at: 2)
                    }
                    try statement.bind(now, at: 3)
                    try statement.bind(String(decoding: attempt, as: UTF8.self), at: 4)
                    try statement.bind(result.deliveryID, at: 5)
                    try statement.step()
                    statement.resetForNextRow()
                }
            }
        }
    }

    public func deliveries(
        subscriptionID: String, status: WebhookDeliveryStatus?, limit: Int, beforeID: Int64?
    ) throws -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        return try read { connection in
            try connection.withStatement(
                """
                SELECT \(Self.deliveryColumns) FROM webhook_deliveries
                WHERE subscription_id = ? AND (? IS NULL OR status = ?) AND id < ?
                ORDER BY id DESC LIMIT ?
                """
            ) { statement in
                try statement.bind(subscriptionID, at: 1)
                try statement.bind(status?.rawValue, at: 2)
                try statement.bind(status?.rawValue, at: 3)
                try statement.bind(beforeID ?? Int64.max, at: 4)
                try statement.bind(limit, at: 5)
                return try Self.decodeDeliveries(statement)
            }
        }
    }

    public func delivery(id: Int64) throws -> WebhookDelivery? {
        try read { connection in
            try connection.withStatement(
                "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE id = ?"
            ) { statement in
                try statement.bind(id, at: 1)
                return try Self.decodeDeliveries(statement).first
            }
        }
    }

    @discardableResult
    public func pruneDeliveries(finishedBefore cutoff: Int64) throws -> Int {
        try write { connection in
            try connection.withStatement(
                "DELETE FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ?"
            ) { statement in
                try statement.bind(cutoff, at: 1)
                try statement.step()
                return connection.changes
            }
        }
    }

    private static func decodeDeliveries(_ statement: SQLiteConnection.Statement) throws -> [WebhookDelivery] {
        var deliveries: [WebhookDelivery] = []
        while try statement.step() {
            let attempts = try decodeJSON([WebhookAttempt].self, statement.bytes(at: 10))
            deliveries.append(WebhookDelivery(
                id: statement.int64(at: 0), subscriptionID: statement.string(at: 1) ?? "",
                eventID: statement.int64(at: 2), messageID: statement.string(at: 3) ?? "",
                eventType: statement.string(at: 4) ?? "", payload: statement.bytes(at: 5),
                status: statement.string(at: 6).flatMap(WebhookDeliveryStatus.init(rawValue:)) ?? .failed,
                attempts: attempts, nextAttemptAt: statement.isNull(at: 7) ? nil : statement.int64(at: 7),
                createdAt: statement.int64(at: 8), updatedAt: statement.int64(at: 9)))
        }
        return deliveries
    }
}

extension SQLiteStore {
    /// Deliveries waiting for a retry: pending after at least one failed attempt (the webhook retry backlog).
    /// The `WHERE` is the one of the partial index `webhook_deliveries_retrying` (schema version 6), so the count
    /// reads that index alone; keep them the same.
    public func retryingDeliveryCount() throws -> Int {
        try read { connection in
            try connection.withStatement(
                "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND attempts > 0"
            ) { statement in
                try statement.step() ? statement.int(at: 0) : 0
            }
        }
    }
}
