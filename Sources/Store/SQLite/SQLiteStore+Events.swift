// APNs Sandbox — SQLiteStore as the event log.
import Sandbox

extension SQLiteStore: EventLogRepository {
    /// Calls `observer` after every commit that logged events, with those events in id order, on the
    /// store's writer thread (it must be quick and must not write to the store synchronously).
    /// Replaces any earlier observer; nil removes it.
    public func observeEvents(_ observer: (@Sendable ([SandboxEvent]) -> Void)?) {
        queue.eventObserver.set(observer)
    }

    public func appendEvents(
        _ drafts: [EventDraft], completion: @escaping @Sendable (Result<[SandboxEvent], any Error>) -> Void
    ) {
        guard !drafts.isEmpty else { return completion(.success([])) }
        if let error = enqueue(.events(drafts: drafts, completion: completion), records: drafts.count) {
            completion(.failure(error))
        }
    }

    public func events(after id: Int64, matching filter: EventFilter, limit: Int) throws -> [SandboxEvent] {
        guard limit > 0 else { return [] }
        var conditions = ["id > ?"]
        var strings: [String] = []
        func add(_ column: String, _ values: [String]) {
            guard !values.isEmpty else { return }
            conditions.append("\(column) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))")
            strings += values
        }
        add("type", filter.types.map(\.rawValue).sorted())
        add("device_token", filter.deviceTokens.sorted())
        add("topic", filter.topics.sorted())
        let sql = """
            SELECT id, type, time, device_token, topic, data FROM events
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY id LIMIT ?
            """
        return try read { connection in
            try connection.withStatement(sql) { statement in
                try statement.bind(id, at: 1)
                var index: Int32 = 2
                for value in strings {
                    try statement.bind(value, at: index)
                    index += 1
                }
                try statement.bind(limit, at: index)
                var events: [SandboxEvent] = []
                while try statement.step() {
                    // A row of an unknown type (written by a newer build) is skipped, not fatal.
                    guard let type = statement.string(at: 1).flatMap(SandboxEventType.init(rawValue:)) else { continue }
                    let draft = EventDraft(
                        type: type, time: statement.int64(at: 2), deviceToken: statement.string(at: 3),
                        topic: statement.string(at: 4), data: statement.bytes(at: 5))
                    events.append(SandboxEvent(id: statement.int64(at: 0), draft: draft))
                }
                return events
            }
        }
    }

    public func latestEventID() throws -> Int64 {
        try read { connection in
            // AUTOINCREMENT keeps the highest id ever used in sqlite_sequence, even after pruning.
            try connection.withStatement("SELECT seq FROM sqlite_sequence WHERE name = 'events'") { statement in
                try statement.step() ? statement.int64(at: 0) : 0
            }
        }
    }

    public func oldestEventID() throws -> Int64? {
        try read { connection in
            try connection.withStatement("SELECT min(id) FROM events") { statement in
                try statement.step() && !statement.isNull(at: 0) ? statement.int64(at: 0) : nil
            }
        }
    }

    /// One chunk of the age pass of ``pruneEvents(maxEvents:olderThan:keepingAbove:)`` (binds: cutoff, floor, chunk),
    /// found along the index that visits about as many events as it deletes (events are logged in time order):
    /// - `byTime` (through events_time) when the event at the floor is not old: the old events all lie below it.
    ///   (The pass used to walk by id alone, and with nothing old walked the whole log to find that out: 0.4 s for
    ///   a million events, on the writer, every pass; seen in the soak.)
    /// - by id otherwise (a webhook subscription behind, its cursor among old events): the events up to the floor
    ///   are old; through events_time the pass would walk every old event above the floor, kept for it.
    static func pruneOldEventsSQL(byTime: Bool) -> String {
        byTime
            ? "DELETE FROM events WHERE id IN (SELECT id FROM events INDEXED BY events_time WHERE time < ? AND id <= ? LIMIT ?)"
            : "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time < ? AND id <= ? ORDER BY id LIMIT ?)"
    }

    /// Deletes events older than `cutoff` and all but the newest `maxEvents` (negative: no cap), in
    /// chunks so that saves are not held up.
    @discardableResult
    public func pruneEvents(maxEvents: Int, olderThan cutoff: Int64) throws -> Int {
        try pruneEvents(maxEvents: maxEvents, olderThan: cutoff, keepingAbove: .max)
    }

    /// ``pruneEvents(maxEvents:olderThan:)``, but never an event with an id above `floor` (the oldest
    /// webhook cursor: events not yet fanned out to every subscription stay).
    @discardableResult
    public func pruneEvents(maxEvents: Int, olderThan cutoff: Int64, keepingAbove floor: Int64) throws -> Int {
        let chunk = Self.pruneChunk
        var total = 0
        let floorEventIsOld = try read { connection in
            try connection.withStatement("SELECT time FROM events WHERE id <= ? ORDER BY id DESC LIMIT 1") { statement in
                try statement.bind(floor, at: 1)
                return try statement.step() && statement.int64(at: 0) < cutoff
            }
        }
        let oldEvents = Self.pruneOldEventsSQL(byTime: !floorEventIsOld)
        while true {
            let deleted = try write { connection in
                try connection.withStatement(oldEvents) { statement in
                    try statement.bind(cutoff, at: 1)
                    try statement.bind(floor, at: 2)
                    try statement.bind(chunk, at: 3)
                    try statement.step()
                    return connection.changes
                }
            }
            total += deleted
            if deleted < chunk { break }
        }
        guard maxEvents >= 0 else { return total }
        let latest = try latestEventID()
        while true {
            let deleted = try write { connection in
                try connection.withStatement(
                    "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?)"
                ) { statement in
                    try statement.bind(min(latest - Int64(maxEvents), floor), at: 1)
                    try statement.bind(chunk, at: 2)
                    try statement.step()
                    return connection.changes
                }
            }
            total += deleted
            if deleted < chunk { break }
        }
        return total
    }
}
