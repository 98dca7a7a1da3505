// APNs Sandbox — an empty main store file beside the state it belongs with (the outbox, the store's own WAL,
// attachments): refused at start, as a damaged file is, instead of starting a new, empty store.
import Foundation

/// What the data directory holds besides an empty (0-byte) main store file.
///
/// SQLite takes a 0-byte file for a new database: it would start an empty store (and delete the file's
/// own `-wal`, whatever it held) while `webhooks.sqlite` still holds the old outbox — every record,
/// device and event silently gone. A 0-byte store file is only ever new: the store is opened (and its
/// schema written) before anything else the sandbox keeps is created (docs/architecture.md, Lifecycle),
/// and SQLite never truncates a database to nothing. So an empty store file next to any of these was
/// emptied from outside, and is refused:
///
/// - the store file's own `-wal` with something in it (SQLite would delete it),
/// - `webhooks.sqlite` or its `-wal` with something in it (it is written only after the store was opened),
/// - an entry in `attachments/` or `app-groups/` (files of stored notifications, of extensions).
///
/// What does not count: the CA, the server certificate and the generated admin token (created by every
/// start, before the store opens, so they are there on a fresh directory's first start too; starting afresh
/// keeps them on purpose, so that clients keep trusting the CA), the lock file, `instances/` (scratch,
/// reset at each start), files moved aside (`*.corrupt-*`). A store file that is missing is a new store.
/// A non-empty file without SQLite's header is not handled here: SQLite calls it not a database, which
/// the integrity check refuses.
struct EmptyStoreCheck: Sendable {
    let storePath: String
    let dataDirectory: String
    let outboxFileName: String

    /// The state found beside `storePath` when that file exists and is empty: each as `name (size)`;
    /// nil when the file is not empty (or missing) or nothing else is there.
    func stateBesideAnEmptyStore() -> [String]? {
        guard let size = Self.size(of: storePath), size == 0 else { return nil }
        var found: [String] = []
        let outbox = dataDirectory + "/" + outboxFileName
        for path in [storePath + "-wal", outbox, outbox + "-wal"] {
            if let bytes = Self.size(of: path), bytes > 0 {
                found.append("\((path as NSString).lastPathComponent) (\(Self.describe(bytes)))")
            }
        }
        for directory in ["attachments", "app-groups"] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory + "/" + directory)) ?? []
            if !entries.isEmpty {
                found.append("\(directory)/ (\(entries.count) \(entries.count == 1 ? "entry" : "entries"))")
            }
        }
        return found.isEmpty ? nil : found
    }

    /// The error that refuses the start (one line): what is wrong and the ways out.
    func refusal(role: String, state: [String]) -> ConfigurationError {
        let name = (storePath as NSString).lastPathComponent
        return ConfigurationError(
            "\(role) \(storePath) is empty (0 bytes) but the data directory \(dataDirectory) holds state that belongs "
                + "with it: \(state.joined(separator: ", ")); starting would silently begin a new, empty \(role) beside it. "
                + "The files were left as they are. To start afresh: stop and move the data directory aside, or remove "
                + "\(name) and \(outboxFileName) (each with its -wal and -shm), attachments/ and app-groups/; to keep the rest: restore "
                + "\(name) from a backup, or set storage.onCorruption to \"moveAside\" to keep the empty file as "
                + "\(name).corrupt-<UTC time> (its -wal with it) and start with an empty \(role).")
    }

    private static func size(of path: String) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }

    private static func describe(_ bytes: Int64) -> String {
        bytes < 1024 ? "\(bytes) bytes" : bytes < 1_048_576
            ? String(format: "%.1f KiB", Double(bytes) / 1024) : String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
