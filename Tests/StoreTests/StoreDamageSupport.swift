// APNs Sandbox — test support: real store files with real damage (pages overwritten on disk).
import Foundation
import Glibc
import Sandbox
@testable import Store

/// Bytes written over a page: not a valid b-tree page type (0x5A) nor a valid overflow-page pointer
/// (0x5A5A5A5A is beyond any test file), so SQLite's checks are sure to see it.
let damagePattern = [UInt8](repeating: 0x5A, count: 4096)

/// Overwrites page `page` (1-based) of the file at `path` with ``damagePattern``, in place.
func overwritePage(_ page: Int64, of path: String, pageSize: Int64 = 4096) throws {
    let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    defer { Glibc.close(fd) }
    let written = damagePattern.withUnsafeBytes { pwrite(fd, $0.baseAddress, Int(pageSize), off_t((page - 1) * pageSize)) }
    guard written == Int(pageSize), fsync(fd) == 0 else { throw POSIXError(.EIO) }
}

/// The file's size in pages of `pageSize`.
func pageCount(of path: String, pageSize: Int64 = 4096) throws -> Int64 {
    let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber
    return (size?.int64Value ?? 0) / pageSize
}

/// A page of `table`'s own b-tree (a leaf near its middle), from SQLite's `dbstat` table.
func leafPage(of table: String, in store: SQLiteStore) throws -> Int64 {
    try store.read { connection in
        try connection.withStatement(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno"
        ) { statement in
            try statement.bind(table, at: 1)
            var pages: [Int64] = []
            while try statement.step() { pages.append(statement.int64(at: 0)) }
            guard !pages.isEmpty else { throw StoreError.corruptRecord("no leaf page of \(table)") }
            return pages[pages.count / 2]
        }
    }
}

/// Folds the WAL into the database file, so that damage to the file is what readers see (from a
/// connection of its own: a checkpoint cannot run inside the writer's transactions).
func checkpoint(_ store: SQLiteStore) throws {
    let connection = try SQLiteConnection(path: store.path, readOnly: false)
    defer { connection.close() }
    try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
}

/// A store at `path` with `count` notification records and as many events, committed and checkpointed.
func makeFilledStore(at path: String, records count: Int) async throws -> SQLiteStore {
    let store = try SQLiteStore(path: path)
    let events = (0..<count).map { index in
        EventDraft(type: .pushAccepted, time: Int64(index), deviceToken: nil, topic: nil, data: Array(#"{"n":1}"#.utf8))
    }
    for start in stride(from: 0, to: count, by: 500) {
        let records = (start..<min(count, start + 500)).map { sampleRecord(apnsID: "id-\($0)", receivedAt: 1_700_000_000_000 + Int64($0)) }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            store.save(records, events: Array(events[start..<min(count, start + 500)])) { continuation.resume(with: $0) }
        }
    }
    try checkpoint(store)
    return store
}

/// A file's bytes, to show that a refused file was left as it was.
func contents(of path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}
