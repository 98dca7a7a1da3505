// APNs Sandbox — the writer thread: owns the write connection and commits queued work in batches.
import Foundation
import Glibc
import Sandbox
import Support

/// The body of the store's one writer thread (group commit).
///
/// It opens the write connection on its own thread (so the connection never crosses threads), runs
/// the integrity check, applies migrations, reports readiness through a ``Latch``, then loops: take
/// everything queued, commit consecutive saves in `BEGIN IMMEDIATE … COMMIT` transactions of at most
/// ``maxBatchRecords`` rows (one `save` call is never split), run each synchronous write in its own
/// transaction, and only after each commit call the completions of the work it contained. Because
/// callers keep queueing while a commit (and its fsync) is in progress, many callers share one commit.
/// Completions run on this thread: they must be quick and must not make synchronous store writes.
///
/// Every failed transaction is reported to the store's ``StoreHealthMonitor``; while that says writes
/// fail, the loop also wakes about once a second, when idle, to ``probe()``.
final class StoreWriter {
    /// Saves a record's new state. A row of the same push (same apns-id and device, same topic, app and
    /// receipt time) gets only the columns a transition changes, so SQLite leaves the indexes on the
    /// unchanged columns alone; otherwise nothing happens (no change) and the row is replaced (``removeReplacedSQL``).
    static let insertOrUpdateSQL = """
        INSERT INTO notifications(apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record,
            push_type, outcome, search_text)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(apns_id, device_token) DO UPDATE SET
            status = excluded.status, updated_at = excluded.updated_at, record = excluded.record,
            outcome = excluded.outcome, search_text = excluded.search_text
        WHERE topic = excluded.topic AND bundle_id = excluded.bundle_id AND received_at = excluded.received_at
        """

    /// A new push that reuses an earlier push's apns-id on the same device replaces that row entirely: the
    /// old row goes and the new one is inserted, so that it gets a new `seq` (listings' `after=` cursor
    /// must see it as new).
    static let removeReplacedSQL = "DELETE FROM notifications WHERE apns_id = ? AND device_token = ?"

    private let connection: SQLiteConnection
    private let queue: WriteQueue
    private let maxBatchRecords: Int
    private let health: StoreHealthMonitor
    /// When the last probe ran (monotonic seconds), while writes were failing.
    private var lastProbe = 0.0

    /// While writes fail, a probe runs this often (and after any work once this long has passed).
    static let probeIntervalSeconds = 1.0
    /// What a probe writes: enough to need new pages (4 of 4 KiB), as a few pushes do.
    static let probeBytes = 16_384
    /// The `apps` key of the probe's row, which is never seen: it is deleted in the same transaction.
    /// (A bundle ID cannot start with a control character.)
    static let probeKey = "\u{1}store-probe"

    private init(connection: SQLiteConnection, queue: WriteQueue, maxBatchRecords: Int, health: StoreHealthMonitor) {
        self.connection = connection
        self.queue = queue
        self.maxBatchRecords = maxBatchRecords
        self.health = health
    }

    /// How the writer opens and uses its connection.
    struct Settings: Sendable {
        var synchronous: SQLiteStore.Synchronous = .full
        var maxBatchRecords: Int
        var niceness: Int32 = 0
        var integrityCheck = IntegrityCheck()
        /// `PRAGMA max_page_count` in bytes; 0 = SQLite's own limit.
        var maxSizeBytes: Int64 = 0
    }

    /// Starts the writer thread and waits until its connection is open, checked and migrated.
    ///
    /// In that order: open; the integrity check (before anything writes, so a damaged file is left
    /// as it was); the per-connection pragmas; migrations; the size limit (after migrations, so that
    /// a migration never fails a start for want of room).
    /// - Returns: A latch fulfilled when the thread has drained the closed queue and closed its
    ///   connection, and what the opening found.
    /// - Throws: The open, check or migration error (the thread has then already exited): code
    ///   `corrupt` for a damaged file.
    static func start(
        path: String, settings: Settings, queue: WriteQueue, health: StoreHealthMonitor
    ) throws -> (finished: Latch<Void>, report: SQLiteStore.OpeningReport) {
        let ready = Latch<Result<SQLiteStore.OpeningReport, StoreError>>()
        let finished = Latch<Void>()
        let thread = Thread {
            queue.writerThread.store(UInt(pthread_self()), ordering: .relaxed)
            // The kernel's name (/proc, `top -H`): Foundation's `Thread.name` does not reach it on Linux.
            CurrentThread.setName("store-writer")
            if settings.niceness != 0 { CurrentThread.setNiceness(settings.niceness) }
            defer {
                // pthread IDs are reused: forget ours before another thread can get it.
                queue.writerThread.store(0, ordering: .relaxed)
                finished.fulfill(())
            }
            let connection: SQLiteConnection
            let report: SQLiteStore.OpeningReport
            do {
                connection = try SQLiteConnection(path: path, readOnly: false)
                // Until the file is open, checked and migrated, closing must not fold the WAL into it: a
                // file that is refused stays exactly as it was.
                try connection.setCheckpointsOnClose(false)
                let integrity = try settings.integrityCheck.run(on: connection, path: path)
                try configure(connection, synchronous: settings.synchronous)
                if try !Schema.migrate(connection).isEmpty {
                    // A migration that rebuilt a table leaves a WAL as large as the table: fold it back
                    // into the database now rather than at the first pushes' commit.
                    try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                }
                report = try limitSize(connection, to: settings.maxSizeBytes, integrity: integrity)
                try connection.setCheckpointsOnClose(true)
            } catch let error as StoreError {
                var error = error.message.contains(path) ? error : error.withContext(path)
                if error.isCorruption, error.code != .corrupt {
                    // Damage found by the first statements rather than by the check (the check is off).
                    error = .corrupt(error.message, resultCode: error.resultCode)
                }
                ready.fulfill(.failure(error))
                return
            } catch {
                ready.fulfill(.failure(.sqlite(0, "\(error)", sql: nil)))
                return
            }
            if report.isAtSizeLimit {
                // Known full before any write fails: not healthy from the start (the first probe runs at once).
                health.record(StoreError.sqlite(SQLiteCode.full, SQLiteCode.message(SQLiteCode.full), sql: nil))
            }
            ready.fulfill(.success(report))
            StoreWriter(connection: connection, queue: queue, maxBatchRecords: settings.maxBatchRecords, health: health)
                .run()
            connection.close()
        }
        thread.name = "store-writer"
        thread.start()
        let report = try ready.wait().get()
        return (finished, report)
    }

    private static func configure(_ connection: SQLiteConnection, synchronous: SQLiteStore.Synchronous) throws {
        // journal_mode is stored in the file; the others are per connection.
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = \(synchronous.rawValue)")
        try connection.execute("PRAGMA foreign_keys = ON")
        // A bigger page cache keeps the four notification indexes in memory while inserting.
        try connection.execute("PRAGMA cache_size = -16384")
        // Truncate the WAL after checkpoints so it does not stay at its high-water mark.
        try connection.execute("PRAGMA journal_size_limit = 67108864")
    }

    /// Sets `PRAGMA max_page_count` from `maxSizeBytes` (when positive) and reads back the sizes.
    /// SQLite keeps the limit at least at the file's current page count.
    private static func limitSize(
        _ connection: SQLiteConnection, to maxSizeBytes: Int64, integrity: IntegrityReport
    ) throws -> SQLiteStore.OpeningReport {
        func value(_ pragma: String) throws -> Int64 {
            try connection.withStatement("PRAGMA \(pragma)") { statement in
                try statement.step() ? statement.int64(at: 0) : 0
            }
        }
        let pageSize = try value("page_size")
        var maxPageCount: Int64?
        if maxSizeBytes > 0 {
            maxPageCount = try value("max_page_count = \(max(1, maxSizeBytes / max(1, pageSize)))")
        }
        return SQLiteStore.OpeningReport(
            integrity: integrity, pageSize: pageSize, pageCount: try value("page_count"),
            freePageCount: try value("freelist_count"), maxPageCount: maxPageCount)
    }

    private func run() {
        var recycled: [WriteItem] = []
        while var items = queue.takeAll(recycling: &recycled, waitingAtMost: secondsUntilProbe()) {
            if !items.isEmpty {
                process(items)
            }
            if let wait = secondsUntilProbe(), wait <= 0 {
                probe()
            }
            items.removeAll(keepingCapacity: true)
            recycled = items
        }
    }

    /// nil while writes succeed; else how long until the next probe is due (0 or less: now).
    private func secondsUntilProbe() -> Double? {
        guard health.isFailing else { return nil }
        return lastProbe + Self.probeIntervalSeconds - MonotonicClock.seconds()
    }

    /// While writes fail (disk full, I/O errors), tries a write like a few pushes': ``probeBytes``
    /// in a row that is deleted again in the same transaction, so nothing is left and no reader sees it.
    /// If it commits, the store is healthy again: this is how readiness returns when space is freed
    /// while no traffic arrives. (A failure is recorded by ``transaction(_:)``.)
    private func probe() {
        lastProbe = MonotonicClock.seconds()
        do {
            try transaction {
                try connection.withStatement("INSERT INTO apps(bundle_id, record) VALUES (?, zeroblob(?))") { statement in
                    try statement.bind(Self.probeKey, at: 1)
                    try statement.bind(Self.probeBytes, at: 2)
                    try statement.step()
                }
                try connection.withStatement("DELETE FROM apps WHERE bundle_id = ?") { statement in
                    try statement.bind(Self.probeKey, at: 1)
                    try statement.step()
                }
            }
            health.recordWriteSucceeded()
        } catch {
            // Still failing; the next probe is one interval away.
        }
    }

    static let insertEventSQL = "INSERT INTO events(type, time, device_token, topic, data) VALUES (?, ?, ?, ?, ?)"

    /// One caller's share of a group commit: notification rows, events, or a batched task, and who to tell.
    private struct Pending {
        var rows: [EncodedRow] = []
        var events: [EventDraft] = []
        var complete: @Sendable (Result<[SandboxEvent], any Error>) -> Void
        var task: (@Sendable (SQLiteConnection) throws -> any Sendable)?
        var taskCompletion: (@Sendable (Result<any Sendable, any Error>) -> Void)?
    }

    private func process(_ items: [WriteItem]) {
        var batch: [Pending] = []
        var batchRows = 0
        for item in items {
            let pending: Pending
            switch item {
            case .save(let rows, let events, let completion):
                pending = Pending(rows: rows, events: events, complete: { completion($0.map { _ in () }) })
            case .events(let drafts, let completion):
                pending = Pending(events: drafts, complete: completion)
            case .batchedTask(let body, let completion):
                pending = Pending(complete: { _ in }, task: body, taskCompletion: completion)
            case .task(let body, let completion):
                if !batch.isEmpty {
                    commit(batch)
                    batch.removeAll(keepingCapacity: true)
                    batchRows = 0
                }
                run(body, completion: completion)
                continue
            }
            let size = pending.rows.count + pending.events.count + (pending.task == nil ? 0 : 1)
            if batchRows > 0, batchRows + size > maxBatchRecords {
                commit(batch)
                batch.removeAll(keepingCapacity: true)
                batchRows = 0
            }
            batch.append(pending)
            batchRows += size
        }
        if !batch.isEmpty {
            commit(batch)
        }
    }

    /// Commits the saves, events and batched tasks in one transaction, then completes them and tells
    /// the event observer. If the transaction fails and it held several callers' work, each is retried
    /// alone so one bad save cannot fail its neighbours.
    private func commit(_ saves: [Pending]) {
        var logged: [[SandboxEvent]] = []
        var taskResults: [(any Sendable)?] = []
        do {
            logged = try transaction {
                let now = WallClock.milliseconds()
                try connection.withStatement(Self.insertOrUpdateSQL) { insertOrUpdate in
                    try connection.withStatement(Self.removeReplacedSQL) { removeReplaced in
                        for save in saves {
                            for row in save.rows where try !write(row, updatedAt: now, with: insertOrUpdate) {
                                try removeReplaced.bind(row.apnsID, at: 1)
                                try removeReplaced.bind(row.deviceToken, at: 2)
                                try removeReplaced.step()
                                removeReplaced.resetForNextRow()
                                try write(row, updatedAt: now, with: insertOrUpdate)
                            }
                        }
                    }
                }
                let logged = try connection.withStatement(Self.insertEventSQL) { statement in
                    try saves.map { save in
                        try save.events.map { draft in try Self.insert(draft, with: statement, on: connection) }
                    }
                }
                taskResults = try saves.map { save in try save.task.map { try $0(connection) } }
                return logged
            }
        } catch {
            if saves.count > 1 {
                for save in saves {
                    commit([save])
                }
            } else {
                for save in saves {
                    save.complete(.failure(error))
                    save.taskCompletion?(.failure(error))
                }
            }
            return
        }
        for (index, (save, events)) in zip(saves, logged).enumerated() {
            save.complete(.success(events))
            if let completion = save.taskCompletion, let result = taskResults[index] {
                completion(.success(result))
            }
        }
        let events = logged.flatMap { $0 }
        if !events.isEmpty {
            queue.eventObserver(events)
        }
    }

    /// Runs ``insertEventSQL`` (prepared as `statement`) for `draft`; returns the event as logged.
    static func insert(
        _ draft: EventDraft, with statement: SQLiteConnection.Statement, on connection: SQLiteConnection
    ) throws -> SandboxEvent {
        try statement.bind(draft.type.rawValue, at: 1)
        try statement.bind(draft.time, at: 2)
        try statement.bind(draft.deviceToken, at: 3)
        try statement.bind(draft.topic, at: 4)
        try statement.bind(draft.data, at: 5)
        try statement.step()
        statement.resetForNextRow()
        return SandboxEvent(id: connection.lastInsertRowID, draft: draft)
    }

    /// Runs ``insertOrUpdateSQL`` for `row`; returns whether a row changed.
    @discardableResult
    private func write(_ row: EncodedRow, updatedAt now: Int64, with statement: SQLiteConnection.Statement) throws -> Bool {
        try Self.write(row, updatedAt: now, with: statement, on: connection)
    }

    /// Runs ``insertOrUpdateSQL`` (prepared as `statement`) for `row`; returns whether a row changed.
    @discardableResult
    static func write(
        _ row: EncodedRow, updatedAt now: Int64, with statement: SQLiteConnection.Statement, on connection: SQLiteConnection
    ) throws -> Bool {
        try statement.bind(row.apnsID, at: 1)
        try statement.bind(row.deviceToken, at: 2)
        try statement.bind(row.topic, at: 3)
        try statement.bind(row.bundleID, at: 4)
        try statement.bind(row.status.rawValue, at: 5)
        try statement.bind(row.receivedAt, at: 6)
        try statement.bind(now, at: 7)
        try statement.bind(row.record, at: 8)
        try statement.bind(row.pushType, at: 9)
        try statement.bind(row.outcome, at: 10)
        try statement.bind(row.searchText, at: 11)
        try statement.step()
        statement.resetForNextRow()
        return connection.changes > 0
    }

    private func run(
        _ body: @Sendable (SQLiteConnection) throws -> any Sendable,
        completion: @Sendable (Result<any Sendable, any Error>) -> Void
    ) {
        let result = Result { try transaction { try body(connection) } }
        completion(result)
    }

    private func transaction<Value>(_ body: () throws -> Value) throws -> Value {
        let started = MonotonicClock.nanoseconds()
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try connection.execute("COMMIT")
            queue.committedTransactions.add(1, ordering: .relaxed)
            if queue.commitObserver.isSet {
                queue.commitObserver(Double(MonotonicClock.nanoseconds() &- started) / 1_000_000_000)
            }
            return value
        } catch {
            if connection.isInTransaction {
                try? connection.execute("ROLLBACK")
            }
            health.record(error)
            throw error
        }
    }
}
