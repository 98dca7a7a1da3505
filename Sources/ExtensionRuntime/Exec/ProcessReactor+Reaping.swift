// APNs Sandbox — the process reactor's reaping and memory sampling, on its thread.
import Glibc

extension ProcessReactor.Core {
    /// Polls every process for its exit, and samples memory when `sample` is set.
    func check(sample: Bool) {
        let entries = state.withLock { Array($0.entries.values) }
        for entry in entries {
            if let (current, exit) = reapIfExited(entry.id) {
                if let registration = current.registration { registry?.unregister(registration) }
                finish(current, exit: exit)
                continue
            }
            guard sample, entry.limitBytes > 0, !entry.hasReportedMemory else { continue }
            // nil while the process has not exec'd: what /proc shows then is the server's memory.
            guard let resident = ProcessMemory.residentBytes(ofTreeAt: entry.pid) else { continue }
            guard resident > entry.limitBytes else { continue }
            state.withLock { $0.entries[entry.id]?.hasReportedMemory = true }
            entry.handler(.memoryExceeded(resident))
        }
    }

    /// Reaps the process if it has exited, and forgets it. Under the lock that ``kill(_:)`` takes; the
    /// group's stragglers are killed before the leader is reaped (`WNOWAIT` first), while its zombie still
    /// holds the pid and the group id.
    private func reapIfExited(_ id: UInt64) -> (Entry, ExitStatus)? {
        state.withLock { state -> (Entry, ExitStatus)? in
            guard let entry = state.entries[id] else { return nil }
            var info = siginfo_t()
            let exit: ExitStatus
            if waitid(P_PID, id_t(entry.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 {
                guard info.si_signo == SIGCHLD else { return nil }  // still running
                // Stragglers of the group (reaped below when they are our children: PID 1, subreaper).
                ChildProcess.killGroup(entry.pid)
                var status: Int32 = 0
                while waitpid(entry.pid, &status, 0) < 0, errno == EINTR {}
                exit = ExitStatus(waitStatus: status)
                var other: Int32 = 0
                while waitpid(-entry.pid, &other, WNOHANG) > 0 {}
            } else if errno == ECHILD {
                // Reaped elsewhere (never by this code): its pid is not ours to signal any more.
                exit = .signaled(SIGKILL)
            } else {
                return nil
            }
            state.entries[id] = nil
            return (entry, exit)
        }
    }

    /// After the process was reaped: the rest of its output, its pipes closed, then `exited`.
    private func finish(_ entry: Entry, exit: ExitStatus) {
        for (fd, isStdout) in [(entry.stdout, true), (entry.stderr, false)] where fd >= 0 {
            let (bytes, _) = Self.drain(fd)
            if !bytes.isEmpty { entry.handler(isStdout ? .stdout(bytes) : .stderr(bytes)) }
            Glibc.close(fd)
            entry.handler(isStdout ? .stdoutClosed : .stderrClosed)
        }
        if entry.stdin >= 0 { Glibc.close(entry.stdin) }
        entry.handler(.exited(exit))
    }

    /// Reads what is available now; returns the bytes and whether the end of the stream was reached.
    static func drain(_ fd: Int32) -> (bytes: [UInt8], eof: Bool) {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while collected.count < 4 << 20 {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                collected += chunk[0..<n]
            } else if n == 0 {
                return (collected, true)
            } else if errno == EINTR {
                continue
            } else {
                return (collected, errno != EAGAIN)
            }
        }
        return (collected, false)
    }
}
