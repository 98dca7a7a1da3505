// APNs Sandbox — the start-time integrity check of a store file (PRAGMA quick_check / integrity_check).
import Foundation
import Support

/// Which check ``SQLiteStore`` runs on its file when it opens it, before anything is written.
///
/// `quick` is `PRAGMA quick_check`: every b-tree page is read and its structure checked (a page
/// overwritten with garbage, a broken free list, a wrong page count, a NULL in a NOT NULL column).
/// `full` is `PRAGMA integrity_check`: the same, and every index entry is matched against its table
/// row (about 3.5× as long). `off` skips the check: a damaged file is then only noticed when a read
/// or write reaches the damaged page.
public struct IntegrityCheck: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        case quick, full, off
    }

    public var mode: Mode
    /// Longest the check may run; when it runs out the check stops and the file is used anyway,
    /// with the report's outcome ``IntegrityReport/Outcome/incomplete``. nil or 0 = no limit.
    public var timeLimitSeconds: Double?

    public init(mode: Mode = .quick, timeLimitSeconds: Double? = nil) {
        self.mode = mode
        self.timeLimitSeconds = timeLimitSeconds
    }

    public static let off = IntegrityCheck(mode: .off)

    /// Problems a failed check lists in its error (SQLite stops looking after this many).
    static let maxFindings = 10
    /// Findings quoted in the error message.
    static let quotedFindings = 5
}

/// What the start-time check of a file that was accepted found.
public struct IntegrityReport: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// The check ran to the end and found nothing.
        case passed
        /// The time limit ran out first: the part of the file that was not checked may still be damaged.
        case incomplete
        /// ``IntegrityCheck/Mode/off``.
        case skipped
    }

    public let mode: IntegrityCheck.Mode
    public let outcome: Outcome
    /// How long the check ran.
    public let seconds: Double
    /// The database file's size in bytes (its WAL not included).
    public let fileBytes: Int64
}

extension IntegrityCheck {
    /// Runs the check on `connection` (just opened, nothing written yet).
    /// - Returns: The report when the file passed, or when the time limit ran out.
    /// - Throws: ``StoreError`` with code `corrupt` naming `path` and quoting the first findings
    ///   when the check found problems or SQLite called the file damaged (`SQLITE_CORRUPT`,
    ///   `SQLITE_NOTADB`); other SQLite errors (I/O) as they are.
    func run(on connection: SQLiteConnection, path: String) throws -> IntegrityReport {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let fileBytes = (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        guard mode != .off else {
            return IntegrityReport(mode: mode, outcome: .skipped, seconds: 0, fileBytes: fileBytes)
        }
        let pragma = mode == .full ? "integrity_check" : "quick_check"
        let start = MonotonicClock.nanoseconds()
        func elapsed() -> Double { Double(MonotonicClock.nanoseconds() - start) / 1e9 }
        // Rows found before a failure are kept: quick_check can list a damaged page, then fail with
        // SQLITE_CORRUPT when its row-by-row pass reaches that page.
        var findings: [String] = []
        do {
            try connection.withTimeLimit(seconds: timeLimitSeconds) {
                try connection.withStatement("PRAGMA \(pragma)(\(Self.maxFindings))") { statement in
                    while try statement.step() {
                        findings.append(statement.string(at: 0) ?? "")
                    }
                }
            }
        } catch let error as StoreError
            where error.primaryResultCode == SQLiteCode.interrupted && Self.problems(in: findings).isEmpty
        {
            // Interrupted before it found anything (or just after its "ok").
            let outcome: IntegrityReport.Outcome = findings == ["ok"] ? .passed : .incomplete
            return IntegrityReport(mode: mode, outcome: outcome, seconds: elapsed(), fileBytes: fileBytes)
        } catch let error as StoreError where error.isCorruption || error.primaryResultCode == SQLiteCode.interrupted {
            let problems = Self.problems(in: findings)
            let found = problems.isEmpty ? "" : " found: " + Self.quote(problems) + ";"
            throw StoreError.corrupt(
                "\(path) is damaged: PRAGMA \(pragma)\(found) \(error.message)",
                resultCode: error.isCorruption ? error.resultCode : SQLiteCode.corrupt)
        }
        guard findings != ["ok"] else {
            return IntegrityReport(mode: mode, outcome: .passed, seconds: elapsed(), fileBytes: fileBytes)
        }
        throw StoreError.corrupt("\(path) is damaged: PRAGMA \(pragma) found: \(Self.quote(Self.problems(in: findings)))")
    }

    /// The findings line by line, without the "*** in database main ***" heading (which SQLite puts
    /// in the first row, before a line break) and without "ok".
    private static func problems(in findings: [String]) -> [String] {
        findings.flatMap { $0.split(separator: "\n").map(String.init) }
            .filter { !$0.hasPrefix("*** in database") && $0 != "ok" }
    }

    /// The first ``quotedFindings`` problems, `; `-separated, and how many more there are.
    private static func quote(_ problems: [String]) -> String {
        var quoted = problems.prefix(quotedFindings).joined(separator: "; ")
        if problems.count > quotedFindings {
            quoted += problems.count >= maxFindings ? "; and more" : "; and \(problems.count - quotedFindings) more"
        }
        return quoted
    }
}
