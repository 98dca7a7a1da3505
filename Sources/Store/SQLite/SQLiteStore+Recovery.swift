// APNs Sandbox — keeping a damaged store file aside so that a fresh one can take its place.
import Foundation
import Glibc
import Support

extension SQLiteStore {
    /// Renames the database file at `path` and its `-wal` and `-shm` files to
    /// `<path>.corrupt-<UTC time>` (`…-wal`, `…-shm`), so that a new store can be created at `path`
    /// while the damaged data stays available for a salvage (the three keep SQLite's naming, so
    /// `sqlite3 <moved file> .recover` reads the file together with its WAL).
    ///
    /// The WAL goes first: a new database at `path` must never find the old WAL and replay it. Call
    /// this only while no store has the file open. Missing `-wal`/`-shm` files are fine.
    /// - Parameter now: The time in the name (`20250102T030405Z`, default ``WallClock``'s); a `-2`, `-3`, …
    ///   is added if taken.
    /// - Returns: The new path of the database file.
    /// - Throws: ``StoreError`` when a file cannot be renamed (what was renamed before stays renamed).
    @discardableResult
    public static func moveAside(
        path: String, now: Date = Date(timeIntervalSince1970: Double(WallClock.milliseconds()) / 1000)
    ) throws -> String {
        let time = UTCDateTime(secondsSince1970: Int64(now.timeIntervalSince1970.rounded(.down)))
        let stamp = UTCDateTime.padded(time.year, 4) + UTCDateTime.padded(time.month, 2) + UTCDateTime.padded(time.day, 2)
            + "T" + UTCDateTime.padded(time.hour, 2) + UTCDateTime.padded(time.minute, 2)
            + UTCDateTime.padded(time.second, 2) + "Z"
        var target = "\(path).corrupt-\(stamp)"
        var attempt = 1
        while ["", "-wal", "-shm"].contains(where: { FileManager.default.fileExists(atPath: target + $0) }) {
            attempt += 1
            target = "\(path).corrupt-\(stamp)-\(attempt)"
        }
        for suffix in ["-wal", "-shm", ""] {
            guard Glibc.rename(path + suffix, target + suffix) == 0 || (errno == ENOENT && !suffix.isEmpty) else {
                let reason = String(cString: strerror(errno))
                throw StoreError.sqlite(0, "cannot move \(path + suffix) to \(target + suffix): \(reason)", sql: nil)
            }
        }
        // Make the renames durable before a new file takes the old name.
        let directory = (path as NSString).deletingLastPathComponent
        let fd = Glibc.open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            Glibc.close(fd)
        }
        return target
    }
}
