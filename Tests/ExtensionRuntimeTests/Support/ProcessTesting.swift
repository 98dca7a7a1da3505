// APNs Sandbox — real processes in tests: spawning from a thread, reaping, looking at /proc.
// (No `import Testing` here: its `ExitStatus` would hide the runtime's.)
import Glibc
import Synchronization

@testable import ExtensionRuntime
import Support

/// Where a thread leaves what it spawned.
final class SpawnBox: Sendable {
    private let value = Locked<Result<ChildProcess, any Error>?>(nil)

    func set(_ result: Result<ChildProcess, any Error>) { value.withLock { $0 = result } }
    var result: Result<ChildProcess, any Error>? { value.withLock { $0 } }
}

/// Reaping, closing and looking at real processes in tests.
enum ProcessTesting {
    /// Waits (polling) up to `seconds` for our child `pid` to exit and reaps it.
    static func reap(_ pid: pid_t, within seconds: Double) -> ExitStatus? {
        var status: Int32 = 0
        var result: ExitStatus?
        _ = waitUntil(seconds: seconds) {
            guard waitpid(pid, &status, WNOHANG) == pid else { return false }
            result = ExitStatus(waitStatus: status)
            return true
        }
        return result
    }

    static func close(_ process: ChildProcess) {
        for fd in [process.stdin, process.stdout, process.stderr] { Glibc.close(fd) }
    }

    /// True when the process that had `pid` and `start` no longer runs: gone, a zombie, or the pid reused.
    static func isDead(_ pid: pid_t, startedAt start: UInt64) -> Bool {
        guard let status = ProcessStatus(pid: pid) else { return true }
        return status.startTime != start || status.isZombie
    }

    /// The first line a child writes to its stdout (non-blocking pipe; polls up to 10 s).
    static func firstLine(_ process: ChildProcess) -> String? {
        ProcessMemoryTests.readLine(process.stdout)
    }
}
