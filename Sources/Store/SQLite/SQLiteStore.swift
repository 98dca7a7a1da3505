// APNs Sandbox — durable notifications, devices and apps in one SQLite file (WAL, group commit).
import Foundation
import Glibc
import Sandbox
import Synchronization
import Support

/// The embedded store: an SQLite database file in WAL mode.
///
/// ### Threads
/// - **Writes** go through one dedicated writer thread (a Foundation `Thread`, never the Swift
///   concurrency pool) that owns the only write connection. ``save(_:completion:)`` encodes the
///   records on the caller's thread, queues them and returns at once; the writer commits everything
///   queued together (group commit) and then calls the completions, on its own thread.
/// - **Device, app, delete and prune writes** are synchronous: they queue a task for the same
///   writer thread (so there is exactly one writer and never `SQLITE_BUSY` between our own
///   connections) and block the caller until it is committed. Do not call them from a save
///   completion (that is the writer thread itself): they throw `wrongThread` there.
/// - **Reads** use a separate read-only connection behind a lock (`Locked`); WAL lets it read while the
///   writer commits, and every read sees all commits whose completions have run.
///
/// ### Lifecycle
/// ``open()`` starts the writer thread, opens (creating with mode 0600), checks (``IntegrityCheck``)
/// and migrates the file, and fails with a ``StoreError`` for an unreadable file, and with code
/// `corrupt` for a damaged or non-SQLite one (left as it was; see ``moveAside(path:now:)``); a store
/// whose open failed has no thread and may be opened again. The initializer opens at once unless told
/// not to (`opensImmediately: false`: the server builds its stores first and opens them when it starts);
/// until then reads and writes fail with code `closed`. ``close()`` refuses new work, lets the writer
/// finish everything queued, and closes both connections; afterwards saves complete with `closed` at
/// once and other calls throw it. `deinit` closes an open store.
///
/// ### Health
/// ``health`` says whether writes commit and whether damage was seen, from every read and write (a
/// damaged page is an error, never an empty result); ``observeHealth(_:)`` tells its changes.
///
/// The type is `Sendable` without `@unchecked`: its own state is the read connection and what
/// opening found, each behind a lock (`Locked`), and the ``WriteQueue`` (which documents its lock); the write
/// connection never leaves the writer thread.
public final class SQLiteStore: NotificationRepository, DeviceRepository {
    /// SQLite's `PRAGMA synchronous` for the write connection.
    public enum Synchronous: String, Sendable {
        /// fsync the WAL on every commit: a committed save survives power loss.
        case full = "FULL"
        /// fsync only at checkpoints: a committed save survives a crash of the process, not of the machine.
        case normal = "NORMAL"
    }

    /// Most records in one group-commit transaction (a single larger `save` call still commits alone).
    public static let maxBatchRecords = 4096
    /// Saves fail with `overloaded` once this many records wait for the writer.
    public static let maxQueuedRecords = 262_144

    /// The database file.
    public let path: String
    let queue: WriteQueue
    let healthMonitor = StoreHealthMonitor()
    private let writerSettings: StoreWriter.Settings
    /// Set by a successful ``open()``.
    private let opened = Locked<Opened?>(nil)
    private let reader: Locked<SQLiteConnection?>
    /// Devices and apps by key, as last written or read (nil = known to be absent): the delivery
    /// engine reads them for every push, which must not cost a query each time.
    let deviceCache = RecordCache<DeviceRecord>()
    let appCache = RecordCache<AppRecord>()

    private struct Opened: Sendable {
        let writerFinished: Latch<Void>
        let report: OpeningReport
    }

    /// What ``open()`` found: the integrity check's report and the file's size. Only after a
    /// successful ``open()`` (a precondition).
    public var openingReport: OpeningReport {
        guard let report = opened.withLock({ $0?.report }) else {
            preconditionFailure("SQLiteStore.openingReport read before the store was opened: \(path)")
        }
        return report
    }

    /// What ``open()`` found.
    public struct OpeningReport: Sendable, Equatable {
        public let integrity: IntegrityReport
        /// SQLite's page size, in bytes.
        public let pageSize: Int64
        /// Pages in the database (after migrations), free ones included.
        public let pageCount: Int64
        /// Pages on the free list: space inside the file that new records reuse.
        public let freePageCount: Int64
        /// The effective `PRAGMA max_page_count` when a size limit was given (never below `pageCount`).
        public let maxPageCount: Int64?

        /// Room left under the size limit (free pages inside the file and pages it may still grow by),
        /// in bytes; nil without a limit.
        public var headroomBytes: Int64? {
            maxPageCount.map { (max(0, $0 - pageCount) + freePageCount) * pageSize }
        }

        /// Whether the file was already (about) at its size limit when it was opened, with less room
        /// than the writer's probe needs: the store then starts `failing`, and writes that need a new
        /// page fail with `SQLITE_FULL` until records are deleted or the limit is raised.
        public var isAtSizeLimit: Bool {
            guard let headroomBytes else { return false }
            return headroomBytes < StoreWriter.probeBytes
        }
    }

    /// A store for the database at `path`, opened at once (``open()``) unless `opensImmediately` is false.
    /// - Parameters:
    ///   - path: A file path (not `:memory:`; the store uses two connections to one file).
    ///   - synchronous: Durability of each commit; `.full` by default.
    ///   - writerNiceness: The writer thread's nice value (a store for background work yields the CPU).
    ///   - integrityCheck: The check run on an existing file before anything is written (a quick check
    ///     without time limit by default).
    ///   - maxSizeBytes: The most the database file may grow to (`PRAGMA max_page_count`); writes that
    ///     would need more fail with `SQLITE_FULL` ("database or disk is full"). 0 = no limit.
    ///   - opensImmediately: Whether to ``open()`` now; when false, nothing is opened or started until
    ///     ``open()`` is called.
    /// - Throws: ``StoreError`` with code `invalidPath` for a path the store cannot use, and ``open()``'s errors.
    public init(
        path: String, synchronous: Synchronous = .full, writerNiceness: Int32 = 0,
        integrityCheck: IntegrityCheck = IntegrityCheck(), maxSizeBytes: Int64 = 0, opensImmediately: Bool = true
    ) throws {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else {
            throw StoreError.invalidPath(path)
        }
        self.path = path
        queue = WriteQueue(maxQueuedRecords: Self.maxQueuedRecords)
        writerSettings = StoreWriter.Settings(
            synchronous: synchronous, maxBatchRecords: Self.maxBatchRecords, niceness: writerNiceness,
            integrityCheck: integrityCheck, maxSizeBytes: maxSizeBytes)
        reader = Locked(nil)
        if opensImmediately {
            try open()
        }
    }

    /// Opens or creates the database file, checks it, brings its schema up to date and starts the writer
    /// thread; from then on the store reads and writes. Returns at once when the store is open already
    /// (and not closed).
    ///
    /// Call it from one thread, and not while ``close()`` runs.
    /// - Throws: ``StoreError`` when the file cannot be opened, is damaged (code `corrupt`: the check
    ///   found problems, or the file is not an SQLite database), or has a newer schema than this build
    ///   knows; code `closed` after ``close()``. The writer thread has then ended; after a failure of the
    ///   file (not of the read connection, which closes the store) it may be opened again, after the file
    ///   was moved aside, say.
    public func open() throws {
        try opened.withLock { opened in
            guard !queue.isClosed else { throw StoreError.closed() }
            guard opened == nil else { return }
            Self.createPrivately(path)
            let (finished, report) = try StoreWriter.start(
                path: path, settings: writerSettings, queue: queue, health: healthMonitor)
            do {
                // Made inside the lock: the connection never exists outside the reader's lock.
                try reader.withLock { reader in
                    let connection = try SQLiteConnection(path: path, readOnly: true)
                    try connection.execute("PRAGMA foreign_keys = ON")
                    reader = connection
                }
            } catch {
                queue.close()
                finished.wait()
                throw error
            }
            opened = Opened(writerFinished: finished, report: report)
            queue.open()
        }
    }

    deinit {
        close()
    }

    /// Sets the one observer of commit durations (seconds of each write transaction, `BEGIN IMMEDIATE` to
    /// `COMMIT`), called on the writer thread after each commit: it must not block.
    public func observeCommits(_ observer: (@Sendable (Double) -> Void)?) {
        queue.commitObserver.set(observer)
    }

    /// Write transactions committed so far (group-commit batches plus synchronous writes).
    public var committedTransactions: Int {
        queue.committedTransactions.load(ordering: .relaxed)
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { queue.isClosed }

    /// Whether writes commit and no damage has been seen (see ``StoreHealth``).
    ///
    /// Writes that fail for a reason outside the store (disk or size limit full, I/O errors) make it
    /// `failing`, as does opening a file that is at its size limit; the writer then probes about once
    /// a second with a 16 KiB write (deleted in the same transaction) and the store is `healthy`
    /// again once one commits. Any read or write that finds the file damaged makes it `corrupt`
    /// until the store is closed.
    public var health: StoreHealth { healthMonitor.current }

    /// Calls `observer` with the new health whenever it changes, on the thread that saw the change
    /// (the writer or a reader), in order. It must be quick and must not read ``health`` (it runs
    /// under the health's lock). Replaces any earlier observer; nil removes it.
    public func observeHealth(_ observer: (@Sendable (StoreHealth) -> Void)?) {
        healthMonitor.observe(observer)
    }

    /// Commits everything already queued, then closes the database. Later calls fail with `closed`.
    /// Blocks until the writer thread is done; safe to call more than once and from several threads.
    ///
    /// Called from a save completion (the writer thread itself), it cannot wait for the writer: it
    /// then returns at once and the writer closes the file after finishing the queue.
    public func close() {
        // The reader first: a read still running when the writer closes its connection holds a lock
        // that keeps SQLite from folding the WAL into the file (it needs the only lock on it), and
        // the -wal would stay behind.
        reader.withLock { connection in
            connection?.close()
            connection = nil
        }
        queue.close()
        // The last reference may be dropped by a completion, running deinit on the writer thread.
        guard !queue.isOnWriterThread else { return }
        // Nil when the store was never opened: no writer thread to wait for.
        opened.withLock { $0?.writerFinished }?.wait()
    }

    // MARK: Plumbing for the repository methods

    /// Runs `body` on the read connection. A failure that shows damage (or an I/O error) is also
    /// recorded in ``health``, so that no reader can take a damaged file for an empty one.
    func read<Value: Sendable>(_ body: (SQLiteConnection) throws -> Value) throws -> Value {
        do {
            return try reader.withLock { connection in
                guard let connection else { throw queue.isOpened || queue.isClosed ? StoreError.closed() : StoreError.notOpen() }
                return try body(connection)
            }
        } catch {
            healthMonitor.record(error)
            // The writer probes only while writes fail; it may be asleep with nothing to write.
            if healthMonitor.isFailing { queue.wakeWriter() }
            throw error
        }
    }

    /// Runs `body` in its own transaction on the writer thread and waits for the commit.
    /// - Returns: What `body` returned.
    /// `committed` runs on the writer thread right after the commit, before the next write completes.
    func write<Value: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws -> Value, committed: (@Sendable (Value) -> Void)? = nil
    ) throws -> Value {
        try waitForWriter(body, joiningGroupCommit: false, committed: committed)
    }

    /// Like ``write(_:)``, but `body` runs inside the next group-commit transaction instead of its own
    /// (no extra commit and fsync); waits for that commit. A failing `body` fails the whole batch, which
    /// is then retried caller by caller, so `body` may run twice (the first run rolled back).
    func writeInGroupCommit<Value: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> Value) throws -> Value {
        try waitForWriter(body, joiningGroupCommit: true)
    }

    private func waitForWriter<Value: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws -> Value, joiningGroupCommit: Bool,
        committed: (@Sendable (Value) -> Void)? = nil
    ) throws -> Value {
        guard !queue.isOnWriterThread else { throw StoreError.wrongThread() }
        let done = Latch<Result<any Sendable, any Error>>()
        let completion: @Sendable (Result<any Sendable, any Error>) -> Void = { result in
            if let committed, case .success(let value) = result, let value = value as? Value { committed(value) }
            done.fulfill(result)
        }
        let item: WriteItem = joiningGroupCommit
            ? .batchedTask(body: body, completion: completion) : .task(body: body, completion: completion)
        if let error = queue.enqueue(item) {
            throw error
        }
        guard let value = try done.wait().get() as? Value else {
            preconditionFailure("a store write task returned a value of the wrong type")
        }
        return value
    }

    func enqueue(_ item: WriteItem, records: Int) -> StoreError? {
        queue.enqueue(item, records: records)
    }

    /// Creates a missing database file with mode 0600 so no other user can read pushes.
    /// SQLite gives its `-wal` and `-shm` files the database file's mode. An existing file keeps its mode.
    private static func createPrivately(_ path: String) {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            Glibc.close(fd)
        }
        // On failure SQLite's own open reports the error with its message.
    }
}
