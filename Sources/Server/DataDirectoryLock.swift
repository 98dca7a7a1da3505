// APNs Sandbox — one server per data directory.
import Glibc
import Synchronization

/// An exclusive `flock` on `<dataDirectory>/.lock`, held while the server lives.
///
/// A second server on the same data directory would kill the first one's extension processes (the
/// start-up cleanup of a previous run's leftovers), finalise its notifications and write to its stores.
/// The lock makes it refuse to start instead, naming the process that holds it. The kernel releases the lock
/// when the holder exits, however it exits (`kill -9` included); the descriptor is close-on-exec, so no
/// extension process inherits it.
final class DataDirectoryLock: Sendable {
    static let fileName = ".lock"
    private let fd: Int32
    private let released = Atomic<Bool>(false)

    /// Takes the lock, waiting up to `waitSeconds` for a holder that is exiting (a server killed a moment ago).
    /// - Throws: ``ConfigurationError`` naming the directory and the holder's pid.
    init(directory: String, waitSeconds: Double = 2) throws {
        let path = directory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigurationError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var waited = 0.0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            guard error == EWOULDBLOCK, waited < waitSeconds else {
                let holder = Self.holder(fd)
                close(fd)
                if error != EWOULDBLOCK {
                    throw ConfigurationError("cannot lock \(path): \(String(cString: strerror(error)))")
                }
                throw ConfigurationError(
                    "the data directory \(directory) is in use by another apns-sandbox"
                        + (holder.map { " (pid \($0))" } ?? "")
                        + ": stop it, or give this server a data directory of its own (--data-dir)")
            }
            usleep(50_000)
            waited += 0.05
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = fd
    }

    /// Gives the lock up (at shutdown); idempotent.
    func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    deinit {
        release()
    }

    private static func holder(_ fd: Int32) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
