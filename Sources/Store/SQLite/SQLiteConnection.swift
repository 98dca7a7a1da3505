// APNs Sandbox — one SQLite connection and its prepared statements: the only file with SQLite's C pointers.
import CLibShims
import CSQLite3
import Foundation
import Synchronization
import Support

/// SQLite's primary result codes that the store tells apart, so that no other file needs the C module.
enum SQLiteCode {
    static let busy = SQLITE_BUSY
    static let locked = SQLITE_LOCKED
    static let noMemory = SQLITE_NOMEM
    static let readOnly = SQLITE_READONLY
    static let interrupted = SQLITE_INTERRUPT
    static let ioError = SQLITE_IOERR
    static let corrupt = SQLITE_CORRUPT
    static let full = SQLITE_FULL
    static let cannotOpen = SQLITE_CANTOPEN
    static let notADatabase = SQLITE_NOTADB

    /// SQLite's English text for a result code (`database or disk is full`).
    static func message(_ code: Int32) -> String {
        String(cString: sqlite3_errstr(code))
    }
}

/// One `sqlite3` connection, confined to a single thread at a time.
///
/// Opened with `SQLITE_OPEN_NOMUTEX` (SQLite's "multi-thread" mode): SQLite does no locking of its
/// own, so the owner must never use a connection from two threads at once. ``SQLiteStore`` keeps
/// its write connection on the writer thread and its read connection behind a lock (`Locked`).
/// Statements are prepared once per SQL string and cached until ``close()``.
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var statements: [String: Statement] = [:]
    let path: String

    /// Opens (and, unless `readOnly`, creates) the database at `path`.
    /// - Throws: ``StoreError`` with SQLite's code and message when the file cannot be opened.
    init(path: String, readOnly: Bool, busyTimeoutMilliseconds: Int32 = 5000) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_NOMUTEX | (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            // Even on failure SQLite usually allocates a handle that carries the message.
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw StoreError.sqlite(rc, "cannot open \(path): \(message)", sql: nil)
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        self.handle = db
    }

    deinit {
        close()
    }

    var isOpen: Bool { handle != nil }

    /// Finalizes every cached statement and closes the connection. Safe to call twice.
    func close() {
        for statement in statements.values {
            statement.finalize()
        }
        statements = [:]
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Runs one or more statements that take no parameters (DDL, pragmas, `BEGIN`/`COMMIT`).
    func execute(_ sql: String) throws {
        let db = try openHandle()
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
    }

    /// Runs `body` with the cached prepared statement for `sql`, then resets it and clears its bindings.
    ///
    /// The reset ends the statement's implicit read transaction, so a later call sees newer commits.
    func withStatement<Result>(_ sql: String, _ body: (Statement) throws -> Result) throws -> Result {
        let statement = try prepared(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    /// The rowid of the last row this connection inserted.
    var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    var changes: Int {
        guard let handle else { return 0 }
        return Int(sqlite3_changes64(handle))
    }

    /// True while a transaction is open (`BEGIN` without `COMMIT`/`ROLLBACK`).
    var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// Whether closing the connection checkpoints the WAL into the database file (SQLite's default;
    /// `SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`). Off while a file is being checked, so that a damaged file
    /// that is refused is left exactly as it was, its WAL beside it.
    func setCheckpointsOnClose(_ enabled: Bool) throws {
        let db = try openHandle()
        var result: Int32 = 0
        let rc = CLibShims_sqlite3_db_config_int(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1, &result)
        guard rc == SQLITE_OK else { throw error(rc, sql: nil) }
    }

    /// Runs `body`; if it is still running `seconds` from now, the statement of this connection that
    /// is running then is interrupted (`sqlite3_interrupt`: it fails with `SQLITE_INTERRUPT` and
    /// its transaction is rolled back). No limit when `seconds` is nil, zero or not finite.
    ///
    /// `sqlite3_interrupt` rather than a progress handler: SQLite 3.40's integrity check walks each
    /// b-tree inside one VDBE instruction, so a progress handler is first called only after the
    /// whole structure walk (measured: 0.15 s on a 290 MB store, however short the limit), while the
    /// interrupt flag is checked on every page (https://sqlite.org/c3ref/interrupt.html).
    func withTimeLimit<Result>(seconds: Double?, _ body: () throws -> Result) throws -> Result {
        guard let seconds, seconds > 0, seconds.isFinite, let handle else { return try body() }
        let interrupter = Interrupter(handle: handle)
        // A thread of its own, not a dispatch timer: a busy global queue would fire it late.
        Thread { interrupter.fire(after: seconds) }.start()
        // Disarmed before this returns, so a late timer can never hit a later statement or a closed handle.
        defer { interrupter.disarm() }
        return try body()
    }

    private func prepared(_ sql: String) throws -> Statement {
        if let statement = statements[sql] { return statement }
        let db = try openHandle()
        var pointer: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard rc == SQLITE_OK, let pointer else { throw error(rc, sql: sql) }
        let statement = Statement(pointer: pointer, connection: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    private func openHandle() throws -> OpaquePointer {
        guard let handle else { throw StoreError.closed() }
        return handle
    }

    fileprivate func error(_ rc: Int32, sql: String?) -> StoreError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        return StoreError.sqlite(rc, message, sql: sql)
    }
}

/// Calls `sqlite3_interrupt` on a connection from a timer thread, but only while armed.
///
/// `@unchecked Sendable`: the handle is used for nothing but `sqlite3_interrupt`, which SQLite
/// documents as safe to call from any thread while the connection is open, and only under `armed`'s
/// lock while it is true; the owner disarms it (under that lock) before it can close the connection.
private final class Interrupter: @unchecked Sendable {
    private let handle: OpaquePointer
    private let armed = Locked(true)
    private let disarmed = DispatchSemaphore(value: 0)

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    /// Blocks the calling (timer) thread until ``disarm()`` or `seconds`, whichever comes first, and
    /// interrupts the connection in the second case if still armed.
    func fire(after seconds: Double) {
        guard disarmed.wait(timeout: .now() + seconds) == .timedOut else { return }
        armed.withLock { armed in
            if armed { sqlite3_interrupt(handle) }
        }
    }

    func disarm() {
        armed.withLock { $0 = false }
        disarmed.signal()
    }
}

extension SQLiteConnection {
    /// A prepared statement owned by its connection. Parameter and column indexes are SQLite's:
    /// parameters count from 1, columns from 0.
    final class Statement {
        private var pointer: OpaquePointer?
        private unowned let connection: SQLiteConnection
        let sql: String

        fileprivate init(pointer: OpaquePointer, connection: SQLiteConnection, sql: String) {
            self.pointer = pointer
            self.connection = connection
            self.sql = sql
        }

        fileprivate func finalize() {
            sqlite3_finalize(pointer)
            pointer = nil
        }

        fileprivate func reset() {
            sqlite3_reset(pointer)
            sqlite3_clear_bindings(pointer)
        }

        /// Makes the statement runnable again, keeping its bindings (to insert many rows with one statement).
        func resetForNextRow() {
            sqlite3_reset(pointer)
        }

        // MARK: Binding

        func bind(_ value: Int64, at index: Int32) throws {
            try check(sqlite3_bind_int64(pointer, index, value))
        }

        func bind(_ value: Int, at index: Int32) throws {
            try bind(Int64(value), at: index)
        }

        func bind(_ value: Double, at index: Int32) throws {
            try check(sqlite3_bind_double(pointer, index, value))
        }

        func bind(_ value: String, at index: Int32) throws {
            var value = value
            let rc = value.withUTF8 { utf8 in
                utf8.withMemoryRebound(to: CChar.self) { text in
                    // TRANSIENT: SQLite copies the text, so the Swift buffer may go away after the call.
                    guard let base = text.baseAddress, !text.isEmpty else {
                        // A NULL pointer would bind NULL, not ''.
                        return sqlite3_bind_text(pointer, index, "", 0, CLibShims_SQLITE_TRANSIENT())
                    }
                    return sqlite3_bind_text(pointer, index, base, Int32(text.count), CLibShims_SQLITE_TRANSIENT())
                }
            }
            try check(rc)
        }

        func bind(_ value: String?, at index: Int32) throws {
            if let value { try bind(value, at: index) } else { try bindNull(at: index) }
        }

        func bind(_ bytes: [UInt8], at index: Int32) throws {
            let rc = bytes.withUnsafeBytes { buffer in
                // A zero-length blob needs a non-NULL pointer, or SQLite stores NULL.
                sqlite3_bind_blob(
                    pointer, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
                    CLibShims_SQLITE_TRANSIENT())
            }
            try check(rc)
        }

        func bindNull(at index: Int32) throws {
            try check(sqlite3_bind_null(pointer, index))
        }

        // MARK: Stepping

        /// Advances to the next row. Returns true when a row is available, false when done.
        @discardableResult
        func step() throws -> Bool {
            let rc = sqlite3_step(pointer)
            switch rc {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw connection.error(rc, sql: sql)
            }
        }

        // MARK: Columns

        func isNull(at column: Int32) -> Bool {
            sqlite3_column_type(pointer, column) == SQLITE_NULL
        }

        func int64(at column: Int32) -> Int64 {
            sqlite3_column_int64(pointer, column)
        }

        func int(at column: Int32) -> Int {
            Int(sqlite3_column_int64(pointer, column))
        }

        func double(at column: Int32) -> Double {
            sqlite3_column_double(pointer, column)
        }

        func string(at column: Int32) -> String? {
            guard let text = sqlite3_column_text(pointer, column) else { return nil }
            let count = Int(sqlite3_column_bytes(pointer, column))
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }

        func bytes(at column: Int32) -> [UInt8] {
            withBlob(at: column) { [UInt8]($0) }
        }

        /// Runs `body` with the column's bytes in place (valid only inside `body`).
        func withBlob<Result>(at column: Int32, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            let base = sqlite3_column_blob(pointer, column)
            let count = Int(sqlite3_column_bytes(pointer, column))
            return try body(UnsafeRawBufferPointer(start: count > 0 ? base : nil, count: count))
        }

        private func check(_ rc: Int32) throws {
            guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
        }
    }
}
