// APNs Sandbox — the one error type of the Store module.

/// A storage failure: an SQLite error (result code, `sqlite3_errmsg`, the SQL), a closed or
/// overloaded store, or a stored record that cannot be decoded.
///
/// Compare errors by ``code``; `description` is for logs.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case sqlite, closed, overloaded, corruptRecord, unsupportedSchema, invalidPath, wrongThread, corrupt
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// SQLite returned an error; ``StoreError/resultCode`` holds its (extended) result code.
        public static let sqlite = Code(.sqlite)
        /// The store was closed before (or while) the operation was submitted, or was not opened yet.
        public static let closed = Code(.closed)
        /// Too many saves are waiting for the writer thread.
        public static let overloaded = Code(.overloaded)
        /// A stored record could not be decoded (truncated, corrupt, or an unknown format version).
        public static let corruptRecord = Code(.corruptRecord)
        /// The database was written by a newer build (its schema version is higher than this build knows).
        public static let unsupportedSchema = Code(.unsupportedSchema)
        /// The path cannot be used (for example `:memory:`: the store needs a file shared by two connections).
        public static let invalidPath = Code(.invalidPath)
        /// A synchronous write was called on the store's writer thread (from a save completion); it would deadlock.
        public static let wrongThread = Code(.wrongThread)
        /// The database file is damaged: its integrity check found problems, or SQLite answered
        /// `SQLITE_CORRUPT` or `SQLITE_NOTADB` while opening it (``StoreError/resultCode`` says which).
        public static let corrupt = Code(.corrupt)

        public var description: String {
            switch base {
            case .sqlite: "sqlite"
            case .closed: "closed"
            case .overloaded: "overloaded"
            case .corruptRecord: "corrupt-record"
            case .unsupportedSchema: "unsupported-schema"
            case .invalidPath: "invalid-path"
            case .wrongThread: "wrong-thread"
            case .corrupt: "corrupt"
            }
        }
    }

    public let code: Code
    /// The SQLite extended result code (`SQLITE_NOTADB` = 26, `SQLITE_BUSY` = 5, …); 0 when not an SQLite error.
    public let resultCode: Int32
    /// `sqlite3_errmsg` for SQLite errors, otherwise a short explanation.
    public let message: String
    /// The statement that failed, if any.
    public let sql: String?
    public let file: String
    public let line: Int

    init(code: Code, resultCode: Int32 = 0, message: String, sql: String? = nil, file: String, line: Int) {
        self.code = code
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
        self.file = file
        self.line = line
    }

    /// SQLite's primary result code: the low byte of ``resultCode`` (`SQLITE_FULL` for `SQLITE_FULL`'s extended codes).
    public var primaryResultCode: Int32 { resultCode & 0xFF }

    /// Whether the error shows a damaged database file: code ``Code/corrupt``, or SQLite's
    /// `SQLITE_CORRUPT` or `SQLITE_NOTADB`. Such a file does not heal; it needs a restore or a recovery.
    public var isCorruption: Bool {
        code == .corrupt || (code == .sqlite && Self.corruptionCodes.contains(primaryResultCode))
    }

    /// Whether the error says that the database cannot be written now for a reason outside the
    /// statement (the disk or `storage.maxSizeMB` is full, an I/O error, the file is locked or became
    /// read-only, memory ran out): such failures may pass, unlike ``isCorruption``.
    public var isEnvironmentFailure: Bool {
        code == .sqlite && Self.environmentCodes.contains(primaryResultCode)
    }

    static let corruptionCodes: Set<Int32> = [SQLiteCode.corrupt, SQLiteCode.notADatabase]
    static let environmentCodes: Set<Int32> = [
        SQLiteCode.full, SQLiteCode.ioError, SQLiteCode.cannotOpen, SQLiteCode.readOnly, SQLiteCode.noMemory,
        SQLiteCode.busy, SQLiteCode.locked,
    ]

    public var description: String {
        var text = "StoreError(\(code)"
        if code == .sqlite || code == .corrupt { text += " \(resultCode)" }
        text += "): \(message)"
        if let sql { text += " [SQL: \(sql)]" }
        return text
    }

    /// The same error with `context` (such as the file path) in front of its message.
    func withContext(_ context: String) -> StoreError {
        StoreError(code: code, resultCode: resultCode, message: "\(context): \(message)", sql: sql, file: file, line: line)
    }

    static func sqlite(
        _ resultCode: Int32, _ message: String, sql: String?, file: String = #fileID, line: Int = #line
    ) -> StoreError {
        StoreError(code: .sqlite, resultCode: resultCode, message: message, sql: sql, file: file, line: line)
    }

    static func closed(file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(code: .closed, message: "the store is closed", file: file, line: line)
    }

    static func notOpen(file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(code: .closed, message: "the store is not open yet", file: file, line: line)
    }

    static func overloaded(queued: Int, file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(
            code: .overloaded, message: "\(queued) records are already waiting to be written", file: file, line: line)
    }

    static func corruptRecord(_ message: String, file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(code: .corruptRecord, message: message, file: file, line: line)
    }

    static func unsupportedSchema(found: Int, known: Int, file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(
            code: .unsupportedSchema,
            message: "the database has schema version \(found); this build knows up to \(known)",
            file: file, line: line)
    }

    static func invalidPath(_ path: String, file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(code: .invalidPath, message: "the store needs a database file, not \(path)", file: file, line: line)
    }

    /// A damaged database file. `resultCode` is `SQLITE_CORRUPT` for integrity-check findings.
    static func corrupt(
        _ message: String, resultCode: Int32 = SQLiteCode.corrupt, file: String = #fileID, line: Int = #line
    ) -> StoreError {
        StoreError(code: .corrupt, resultCode: resultCode, message: message, file: file, line: line)
    }

    static func wrongThread(file: String = #fileID, line: Int = #line) -> StoreError {
        StoreError(
            code: .wrongThread,
            message: "synchronous store writes cannot run on the store's writer thread (inside a save completion)",
            file: file, line: line)
    }
}
