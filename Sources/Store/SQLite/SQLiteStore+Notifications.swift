// APNs Sandbox — SQLiteStore as the NotificationRepository.
import Sandbox

extension SQLiteStore {
    /// Queues `records` for the next group commit and returns at once.
    ///
    /// `completion` runs once, after the transaction holding all of `records` has committed (or
    /// failed), on the store's writer thread. It runs at once on the calling thread when there is
    /// nothing to save, when the store is closed (`closed`), or when too much is queued (`overloaded`).
    /// The records of one call are committed atomically.
    public func save(
        _ records: [NotificationRecord], completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        save(records, events: [], completion: completion)
    }

    /// As ``save(_:completion:)``; `events` go into the event log in the same transaction.
    public func save(
        _ records: [NotificationRecord], events: [EventDraft],
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        guard !records.isEmpty || !events.isEmpty else { return completion(.success(())) }
        // Encoding happens here, on the callers' threads, so it runs in parallel and off the writer.
        let rows = Self.lastStates(of: records).map(EncodedRow.init)
        if let error = enqueue(.save(rows: rows, events: events, completion: completion), records: rows.count + events.count) {
            completion(.failure(error))
        }
    }

    /// `records` with each notification (apns-id on a device) once: at the place of its first record,
    /// with its last record's state. A save often holds several transitions of one push (`delivering`
    /// then `displayed`); in one transaction only the last would remain, so the others are not written.
    static func lastStates(of records: [NotificationRecord]) -> [NotificationRecord] {
        guard records.count > 1 else { return records }
        struct Key: Hashable {
            var apnsID: String
            var deviceToken: String
        }
        var placeByKey: [Key: Int] = [:]
        placeByKey.reserveCapacity(records.count)
        var states: [NotificationRecord] = []
        states.reserveCapacity(records.count)
        for record in records {
            let key = Key(apnsID: record.apnsID, deviceToken: record.deviceToken)
            if let place = placeByKey[key] {
                states[place] = record
            } else {
                placeByKey[key] = states.count
                states.append(record)
            }
        }
        return states
    }

    /// Saves `records` and returns once they are committed.
    public func save(_ records: [NotificationRecord]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            save(records) { continuation.resume(with: $0) }
        }
    }

    public func notification(apnsID: String, deviceToken: String?) throws -> NotificationRecord? {
        try read { connection in
            if let deviceToken {
                return try connection.withStatement(
                    "SELECT record FROM notifications WHERE apns_id = ? AND device_token = ?"
                ) { statement in
                    try statement.bind(apnsID, at: 1)
                    try statement.bind(deviceToken, at: 2)
                    guard try statement.step() else { return nil }
                    return try statement.withBlob(at: 0, NotificationRecordCodec.decode)
                }
            }
            return try connection.withStatement(
                "SELECT record FROM notifications WHERE apns_id = ? ORDER BY received_at DESC, seq DESC LIMIT 1"
            ) { statement in
                try statement.bind(apnsID, at: 1)
                guard try statement.step() else { return nil }
                return try statement.withBlob(at: 0, NotificationRecordCodec.decode)
            }
        }
    }

    /// Whether a notification with this apns-id exists on `deviceToken` (on any device when nil).
    public func containsNotification(apnsID: String, deviceToken: String?) throws -> Bool {
        try read { connection in
            let sql = deviceToken == nil
                ? "SELECT 1 FROM notifications WHERE apns_id = ? LIMIT 1"
                : "SELECT 1 FROM notifications WHERE apns_id = ? AND device_token = ?"
            return try connection.withStatement(sql) { statement in
                try statement.bind(apnsID, at: 1)
                if let deviceToken { try statement.bind(deviceToken, at: 2) }
                return try statement.step()
            }
        }
    }

    /// Records matching `filter`, newest first (`received_at` descending, then most recently inserted).
    /// A `limit` of 0 or less returns nothing; a negative `offset` counts as 0.
    public func notifications(
        matching filter: NotificationFilter, limit: Int, offset: Int
    ) throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        let condition = SQLCondition(filter)
        let sql = """
            SELECT record FROM notifications\(condition.sql) ORDER BY received_at DESC, seq DESC LIMIT ? OFFSET ?
            """
        return try read { connection in
            try connection.withStatement(sql) { statement in
                let next = try condition.bind(to: statement)
                try statement.bind(limit, at: next)
                try statement.bind(max(offset, 0), at: next + 1)
                return try Self.decodeRecords(statement)
            }
        }
    }

    public func count(matching filter: NotificationFilter) throws -> Int {
        let condition = SQLCondition(filter)
        return try read { connection in
            try connection.withStatement("SELECT count(*) FROM notifications\(condition.sql)") { statement in
                try condition.bind(to: statement)
                return try statement.step() ? statement.int(at: 0) : 0
            }
        }
    }

    /// The last `seq` handed out (AUTOINCREMENT never reuses one, even after deletes and prunes).
    public func latestCursor() throws -> Int64 {
        try read { connection in
            try connection.withStatement("SELECT seq FROM sqlite_sequence WHERE name = 'notifications'") { statement in
                try statement.step() ? statement.int64(at: 0) : 0
            }
        }
    }

    /// Records whose status is not final, oldest first (`received_at`, then insertion order).
    public func unfinished() throws -> [NotificationRecord] {
        let condition = SQLCondition(statusIn: NotificationStatus.allCases.filter { !$0.isFinal })
        return try read { connection in
            try connection.withStatement(
                "SELECT record FROM notifications\(condition.sql) ORDER BY received_at ASC, seq ASC"
            ) { statement in
                try condition.bind(to: statement)
                return try Self.decodeRecords(statement)
            }
        }
    }

    /// Deletes matching records (an empty filter deletes all); returns which. Saves queued before this
    /// call are committed first.
    @discardableResult
    public func deleteNotifications(matching filter: NotificationFilter) throws -> [NotificationKey] {
        let condition = SQLCondition(filter)
        return try write { connection in
            try connection.withStatement(
                "DELETE FROM notifications\(condition.sql) RETURNING apns_id, device_token"
            ) { statement in
                try condition.bind(to: statement)
                return try Self.keys(statement)
            }
        }
    }

    /// The (apns-id, device) pairs a `… RETURNING apns_id, device_token` statement yields.
    private static func keys(_ statement: SQLiteConnection.Statement) throws -> [NotificationKey] {
        var keys: [NotificationKey] = []
        while try statement.step() {
            keys.append(NotificationKey(apnsID: statement.string(at: 0) ?? "", deviceToken: statement.string(at: 1) ?? ""))
        }
        return keys
    }

    /// Deletes final-status records received before `cutoff` (wall-clock ms), then the oldest
    /// final records beyond the newest `maxRecords` (a negative `maxRecords` sets no cap).
    /// - Returns: How many records were deleted in total.
    @discardableResult
    public func prune(maxRecords: Int, olderThan cutoff: Int64) throws -> Int {
        let result = try prune(keepingAtMost: maxRecords, receivedBefore: cutoff)
        return result.expired + result.overflow
    }

    /// Rows deleted per transaction by prune, so a large prune never holds up saves for long:
    /// saves queued meanwhile are committed between two chunks (1,000 records take ~10 ms here).
    static let pruneChunk = 1000

    /// The final records, counted through the (status, received_at) index (binds: the final statuses).
    static func finalCountSQL(_ finalStatuses: SQLCondition) -> String {
        "SELECT count(*) FROM notifications\(finalStatuses.sql)"
    }

    /// One chunk of the count pass: the oldest final records after a position, in the received_at index's order
    /// (binds: the final statuses, the position's received_at and seq, the chunk's size).
    static func pruneOverflowSQL(_ finalStatuses: SQLCondition) -> String {
        """
        DELETE FROM notifications WHERE seq IN (
            SELECT seq FROM notifications INDEXED BY notifications_received
            \(finalStatuses.sql) AND (received_at, seq) > (?, ?)
            ORDER BY received_at, seq LIMIT ?)
        RETURNING apns_id, device_token, received_at, seq
        """
    }

    /// ``prune(maxRecords:olderThan:)`` with the two counts apart: `expired` (final and older than
    /// the cutoff) and `overflow` (final records beyond the newest `maxRecords` final ones; records
    /// still on their way to a device are never pruned, so nothing acknowledged is lost). Deletes in
    /// chunks of ``pruneChunk`` rows, each its own transaction, and tells `removed` which records each
    /// committed chunk took (their attachment files are the caller's to remove).
    public func prune(
        keepingAtMost maxRecords: Int, receivedBefore cutoff: Int64,
        removed: ([NotificationKey]) -> Void = { _ in }
    ) throws -> (expired: Int, overflow: Int) {
        let finalStatuses = SQLCondition(statusIn: NotificationStatus.allCases.filter(\.isFinal))
        let chunk = Self.pruneChunk
        var expired = 0
        while true {
            let deleted = try write { connection in
                try connection.withStatement(
                    """
                    DELETE FROM notifications WHERE seq IN (
                        SELECT seq FROM notifications\(finalStatuses.sql) AND received_at < ? LIMIT ?)
                    RETURNING apns_id, device_token
                    """
                ) { statement in
                    let next = try finalStatuses.bind(to: statement)
                    try statement.bind(cutoff, at: next)
                    try statement.bind(chunk, at: next + 1)
                    return try Self.keys(statement)
                }
            }
            expired += deleted.count
            if !deleted.isEmpty { removed(deleted) }
            if deleted.count < chunk { break }
        }
        guard maxRecords >= 0 else { return (expired, 0) }
        // How many final records are over the cap: counted once, on the read connection, through the covering
        // (status, received_at) index; then that many go, oldest first, each chunk read in the order of the
        // received_at index (whose entries end with the seq) from where the last one stopped. (Each chunk used to
        // find its rows with `ORDER BY … OFFSET maxRecords`, sorting every final record on the writer: pushes
        // stalled for up to a second each minute in the soak.) A record deleted through the API meanwhile is
        // still counted, so a pass may leave a few fewer than `maxRecords`; newer ones arriving are kept.
        let finalCount = try read { connection in
            try connection.withStatement(Self.finalCountSQL(finalStatuses)) { statement in
                _ = try finalStatuses.bind(to: statement)
                return try statement.step() ? Int(statement.int64(at: 0)) : 0
            }
        }
        var remaining = finalCount - maxRecords
        var after: (Int64, Int64) = (.min, .min)
        var overflow = 0
        while remaining > 0 {
            let start = after
            let limit = min(chunk, remaining)
            let deleted = try write { connection in
                try connection.withStatement(Self.pruneOverflowSQL(finalStatuses)) { statement in
                    let next = try finalStatuses.bind(to: statement)
                    try statement.bind(start.0, at: next)
                    try statement.bind(start.1, at: next + 1)
                    try statement.bind(limit, at: next + 2)
                    var keys: [NotificationKey] = []
                    var last = start
                    while try statement.step() {
                        keys.append(NotificationKey(apnsID: statement.string(at: 0) ?? "", deviceToken: statement.string(at: 1) ?? ""))
                        let row = (statement.int64(at: 2), statement.int64(at: 3))
                        if row > last { last = row }
                    }
                    return (keys, last)
                }
            }
            after = deleted.1
            overflow += deleted.0.count
            remaining -= deleted.0.count
            if !deleted.0.isEmpty { removed(deleted.0) }
            if deleted.0.count < limit { break }
        }
        return (expired, overflow)
    }

    private static func decodeRecords(_ statement: SQLiteConnection.Statement) throws -> [NotificationRecord] {
        var records: [NotificationRecord] = []
        while try statement.step() {
            records.append(try statement.withBlob(at: 0, NotificationRecordCodec.decode))
        }
        return records
    }
}
