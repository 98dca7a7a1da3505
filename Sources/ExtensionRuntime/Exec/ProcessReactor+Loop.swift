// APNs Sandbox — the process reactor's thread: one poll(2) over every pipe, then reaping on the tick.
import Glibc
import Support

extension ProcessReactor.Core {
    private static func now() -> UInt64 { MonotonicClock.nanoseconds() }

    private enum Stream { case stdin, stdout, stderr }

    func run() {
        var nextTick = Self.now() + UInt64(interval) * 1_000_000
        var soonChecks = 0
        while true {
            // 1. Close what callers asked to close, then collect the descriptors to poll.
            applyRequests()
            var polled: [pollfd] = []
            var owners: [Int32: (id: UInt64, stream: Stream)] = [:]
            if let wake { polled.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)) }
            let (stopped, hasProcesses) = state.withLock { state -> (Bool, Bool) in
                for entry in state.entries.values {
                    if entry.stdout >= 0 {
                        polled.append(pollfd(fd: entry.stdout, events: Int16(POLLIN), revents: 0))
                        owners[entry.stdout] = (entry.id, .stdout)
                    }
                    if entry.stderr >= 0 {
                        polled.append(pollfd(fd: entry.stderr, events: Int16(POLLIN), revents: 0))
                        owners[entry.stderr] = (entry.id, .stderr)
                    }
                    if entry.stdin >= 0, !entry.pending.isEmpty {
                        polled.append(pollfd(fd: entry.stdin, events: Int16(POLLOUT), revents: 0))
                        owners[entry.stdin] = (entry.id, .stdin)
                    }
                }
                return (state.isStopped, !state.entries.isEmpty)
            }
            if stopped, !hasProcesses { break }
            let now = Self.now()
            let timeout: Int32 = hasProcesses
                ? Int32(clamping: (nextTick > now ? nextTick - now : 0) / 1_000_000) : -1
            _ = poll(&polled, nfds_t(polled.count), timeout)

            // 2. I/O on whatever is ready.
            var stdoutClosed = false
            for descriptor in polled where descriptor.revents != 0 {
                guard let owner = owners[descriptor.fd] else {
                    var sink = [UInt8](repeating: 0, count: 256)
                    while Glibc.read(descriptor.fd, &sink, sink.count) > 0 {}
                    continue
                }
                switch owner.stream {
                case .stdin: flush(owner.id)
                case .stdout: stdoutClosed = read(owner.id, fd: descriptor.fd, isStdout: true) || stdoutClosed
                case .stderr: _ = read(owner.id, fd: descriptor.fd, isStdout: false)
                }
            }

            // 3. Reap and sample: on the tick, and a few times right after a stdout closed.
            let checkNow = state.withLock { state -> Bool in
                defer { state.checkSoon = false }
                return state.checkSoon
            }
            if stdoutClosed || checkNow { soonChecks = 3 }
            let tickNow = Self.now()
            if tickNow >= nextTick {
                nextTick = tickNow + UInt64(interval) * 1_000_000
                check(sample: true)
            } else if soonChecks > 0 {
                soonChecks -= 1
                check(sample: false)
                if soonChecks > 0 { nextTick = min(nextTick, tickNow + 2_000_000) }
            }
        }
        state.withLock { $0.isRunning = false }
    }

    /// Closes stdin or the output pipes where a caller asked to (only this thread closes descriptors).
    private func applyRequests() {
        state.withLock { state in
            for id in state.entries.keys {
                guard var entry = state.entries[id], (entry.closeStdin && entry.stdin >= 0)
                    || (entry.detached && (entry.stdout >= 0 || entry.stderr >= 0))
                else { continue }
                if entry.closeStdin, entry.stdin >= 0 {
                    Glibc.close(entry.stdin)
                    entry.stdin = -1
                }
                if entry.detached {
                    for fd in [entry.stdout, entry.stderr] where fd >= 0 { Glibc.close(fd) }
                    entry.stdout = -1
                    entry.stderr = -1
                }
                state.entries[id] = entry
            }
        }
    }

    /// Reads a ready output pipe; returns true when it was a stdout that reached its end.
    private func read(_ id: UInt64, fd: Int32, isStdout: Bool) -> Bool {
        guard let handler = state.withLock({ $0.entries[id]?.handler }) else { return false }
        let (bytes, eof) = Self.drain(fd)
        if !bytes.isEmpty { handler(isStdout ? .stdout(bytes) : .stderr(bytes)) }
        guard eof else { return false }
        Glibc.close(fd)
        state.withLock { state in
            if isStdout { state.entries[id]?.stdout = -1 } else { state.entries[id]?.stderr = -1 }
        }
        handler(isStdout ? .stdoutClosed : .stderrClosed)
        return isStdout
    }

    /// Writes pending stdin bytes (non-blocking, so under the lock); a broken pipe drops them and closes.
    private func flush(_ id: UInt64) {
        state.withLock { state in
            guard var entry = state.entries[id], entry.stdin >= 0 else { return }
            while !entry.pending.isEmpty {
                let fd = entry.stdin
                let written = entry.pending.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if written > 0 {
                    entry.pending.removeFirst(written)
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    if !(written < 0 && errno == EAGAIN) {
                        // EPIPE: the process closed its stdin or is gone.
                        entry.pending = []
                        Glibc.close(entry.stdin)
                        entry.stdin = -1
                    }
                    break
                }
            }
            state.entries[id] = entry
        }
    }
}
