// APNs Sandbox — the writer thread: owns the write connection and commits queued work in batches.
import CLinuxSystem
import Foundation
import Glibc
import Sandbox

/// The body of the store's one writer thread (group commit).
///
/// It opens the write connection on its own thread (so the connection never crosses threads),
/// applies migrations, reports readiness through a ``Latch``, then loops: take everything queued,
/// commit consecutive saves in `BEGIN IMMEDIATE … COMMIT` transactions of at most
/// ``maxBatchRecords`` rows (one `save` call is never split), run each synchronous write in its own
/// transaction, and only after each commit call the completions of the work it contained. Because
/// callers keep queueing while a commit (and its fsync) is in progress, many callers share one commit.
/// Completions run on this thread: they must be quick and must not make synchronous store writes.
final class StoreWriter {
    /// Saves a record's new state. A row of the same push (same apns-id and device, same topic, app and
    /// receipt time) gets only the columns a transition changes, so SQLite leaves the indexes on the
    /// unchanged columns alone; otherwise nothing happens (no change) and ``replaceSQL`` runs instead.
    static let insertOrUpdateSQL = """
        INSERT INTO notifications(apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(apns_id, device_token) DO UPDATE SET
            status = excluded.status, updated_at = excluded.updated_at, record = excluded.record
        WHERE topic = excluded.topic AND bundle_id = excluded.bundle_id AND received_at = excluded.received_at
        """

    /// A new push that reuses an earlier push's apns-id on the same device replaces that row entirely.
    static let replaceSQL = """
        INSERT INTO notifications(apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(apns_id, device_token) DO UPDATE SET
            topic = excluded.topic, bundle_id = excluded.bundle_id, status = excluded.status,
            received_at = excluded.received_at, updated_at = excluded.updated_at, record = excluded.record
        """

    private let connection: SQLiteConnection
    private let queue: WriteQueue
    private let maxBatchRecords: Int

    private init(connection: SQLiteConnection, queue: WriteQueue, maxBatchRecords: Int) {
        self.connection = connection
        self.queue = queue
        self.maxBatchRecords = maxBatchRecords
    }

    /// Starts the writer thread and waits until its connection is open and migrated.
    /// - Returns: A latch fulfilled when the thread has drained the closed queue and closed its connection.
    /// - Throws: The open or migration error (the thread has then already exited).
    static func start(
        path: String, synchronous: SQLiteStore.Synchronous, queue: WriteQueue, maxBatchRecords: Int,
        niceness: Int32 = 0
    ) throws -> Latch<Void> {
        let ready = Latch<Result<Void, StoreError>>()
        let finished = Latch<Void>()
        let thread = Thread {
            queue.writerThread.store(UInt(pthread_self()), ordering: .relaxed)
            if niceness != 0 { _ = CLinuxSystem_set_thread_niceness(niceness) }
            defer {
                // pthread IDs are reused: forget ours before another thread can get it.
                queue.writerThread.store(0, ordering: .relaxed)
                finished.fulfill(())
            }
            let connection: SQLiteConnection
            do {
                connection = try SQLiteConnection(path: path, readOnly: false)
                try configure(connection, synchronous: synchronous)
                if try !Schema.migrate(connection).isEmpty {
                    // A migration that rebuilt a table leaves a WAL as large as the table: fold it back
                    // into the database now rather than at the first pushes' commit.
                    try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                }
            } catch let error as StoreError {
                ready.fulfill(.failure(error.message.contains(path) ? error : error.withContext(path)))
                return
            } catch {
                ready.fulfill(.failure(.sqlite(0, "\(error)", sql: nil)))
                return
            }
            ready.fulfill(.success(()))
            StoreWriter(connection: connection, queue: queue, maxBatchRecords: maxBatchRecords).run()
            connection.close()
        }
        thread.name = "store-writer"
        thread.start()
        try ready.wait().get()
        return finished
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

    private func run() {
        var recycled: [WriteItem] = []
        while var items = queue.takeAll(recycling: &recycled) {
            process(items)
            items.removeAll(keepingCapacity: true)
            recycled = items
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
                let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
                try connection.withStatement(Self.insertOrUpdateSQL) { insertOrUpdate in
                    try connection.withStatement(Self.replaceSQL) { replace in
                        for save in saves {
                            for row in save.rows where try !write(row, updatedAt: now, with: insertOrUpdate) {
                                try write(row, updatedAt: now, with: replace)
                            }
                        }
                    }
                }
                let logged = try connection.withStatement(Self.insertEventSQL) { statement in
                    try saves.map { save in
                        try save.events.map { draft in
                            try statement.bind(draft.type.rawValue, at: 1)
                            try statement.bind(draft.time, at: 2)
                            try statement.bind(draft.deviceToken, at: 3)
                            try statement.bind(draft.topic, at: 4)
                            try statement.bind(draft.data, at: 5)
                            try statement.step()
                            statement.resetForNextRow()
                            return SandboxEvent(id: connection.lastInsertRowID, draft: draft)
                        }
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
        if !events.isEmpty, let observer = queue.eventObserver.withLock({ $0 }) {
            observer(events)
        }
    }

    /// Runs `statement` (``insertOrUpdateSQL`` or ``replaceSQL``) for `row`; returns whether a row changed.
    @discardableResult
    private func write(_ row: EncodedRow, updatedAt now: Int64, with statement: SQLiteConnection.Statement) throws -> Bool {
        try statement.bind(row.apnsID, at: 1)
        try statement.bind(row.deviceToken, at: 2)
        try statement.bind(row.topic, at: 3)
        try statement.bind(row.bundleID, at: 4)
        try statement.bind(row.status.rawValue, at: 5)
        try statement.bind(row.receivedAt, at: 6)
        try statement.bind(now, at: 7)
        try statement.bind(row.record, at: 8)
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
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try connection.execute("COMMIT")
            queue.committedTransactions.add(1, ordering: .relaxed)
            return value
        } catch {
            if connection.isInTransaction {
                try? connection.execute("ROLLBACK")
            }
            throw error
        }
    }
}
