// APNs Sandbox — one thread that does all exec extension I/O: pipes, reaping, memory sampling.
import CProcess
import Foundation
import Glibc
import Support
import Synchronization

/// What happened to a watched process, in order (all its output comes before `exited`).
enum ProcessEvent: Sendable {
    case stdout([UInt8])
    case stdoutClosed
    case stderr([UInt8])
    case stderrClosed
    /// The group's resident bytes went over the limit (reported once).
    case memoryExceeded(Int)
    /// The process was reaped; every byte it wrote before has been delivered.
    case exited(ExitStatus)
}

/// All exec extension processes of a runtime, served by a single `poll(2)` thread.
///
/// ### Overview
/// The thread polls every watched pipe (stdout, stderr, and stdin while bytes wait to be written) and a
/// wake-up pipe. Every ``interval`` while processes exist (and soon after a stdout closes) it checks each
/// process with `waitid(WNOHANG | WNOWAIT)`: an exited one has the rest of its group killed, is reaped, has
/// its pipes drained and its `exited` event sent, and is forgotten. A live one has its group's resident
/// memory sampled (``ProcessMemory``), once it has exec'd.
///
/// ### Why not dispatch sources
/// Cancelling a dispatch read source from its own handler at a pipe's end-of-file crashed libdispatch's
/// epoll manager on Linux (`_dispatch_event_loop_drain`, a freed muxnote) in this project's tests. Here one
/// thread owns every descriptor from registration to `close`, so a closed descriptor can never be reused
/// under a live registration. It is also the "single reaper" the issue asks for: no thread per process.
///
/// ### Pids
/// Callers name processes by ``Handle``, never by pid alone: a reaped pid may soon name another process
/// (pid_max is 32768 on many systems). A group is signalled only while its leader is unreaped, under the
/// lock that reaping takes. `waitpid`/`waitid` are called only for our own pids, never `-1`, so children
/// that other code spawned (Foundation's `Process`) keep their exit status. Event handlers run on the
/// reactor thread and must only hop to another queue.
///
/// ### Registrations
/// A process's ``ChildProcess/registration`` (its ledger record and guardian entry) is given back to the
/// ``ProcessRegistry`` right after it was reaped, its group killed: never while any of it may still run.
final class ProcessReactor: Sendable {
    /// A watched process. Its pid names it only until it is reaped; the handle never names another one.
    struct Handle: Sendable, Hashable {
        let id: UInt64
        let pid: pid_t
    }

    private let core: Core

    init(intervalMilliseconds: Int, registry: ProcessRegistry? = nil) {
        core = Core(interval: max(1, intervalMilliseconds), registry: registry)
    }

    deinit {
        core.stop()
    }

    /// Starts serving a spawned process; takes ownership of its three descriptors.
    func add(_ process: ChildProcess, limitBytes: Int, handler: @escaping @Sendable (ProcessEvent) -> Void) -> Handle {
        core.add(process, limitBytes: limitBytes, handler: handler)
    }

    /// Queues bytes for the process's stdin (dropped when stdin is closed or broken, or the process reaped).
    func write(_ bytes: [UInt8], to process: Handle) { core.update(process.id) { $0.pending += bytes } }

    /// Closes the process's stdin (pending bytes are dropped).
    func closeStdin(_ process: Handle) {
        core.update(process.id) {
            $0.pending = []
            $0.closeStdin = true
        }
    }

    /// Stops reading the process's output (its pipes are closed); it is still reaped.
    func detach(_ process: Handle) { core.update(process.id) { $0.detached = true } }

    /// SIGKILL to the process group unless the process has been reaped; it is reaped within a moment.
    func kill(_ process: Handle) { core.kill(process.id) }

    /// Processes not yet reaped.
    var count: Int { core.count }

    // MARK: - The thread

    /// The state the thread serves; the facade holds it so that the thread can be stopped on `deinit`.
    private final class Core: Sendable {
        struct Entry {
            var id: UInt64
            var pid: pid_t
            var stdin: Int32
            var stdout: Int32
            var stderr: Int32
            var registration: ProcessRegistry.Registration?
            var pending: [UInt8] = []
            var closeStdin = false
            var detached = false
            var limitBytes: Int
            var hasReportedMemory = false
            var handler: @Sendable (ProcessEvent) -> Void
        }

        struct State {
            var entries: [UInt64: Entry] = [:]
            var nextID: UInt64 = 1
            var isRunning = false
            var isStopped = false
            var checkSoon = false
        }

        let interval: Int
        private let registry: ProcessRegistry?
        private let state = Mutex(State())
        private let wake: (read: Int32, write: Int32)?

        init(interval: Int, registry: ProcessRegistry?) {
            self.interval = interval
            self.registry = registry
            if let pipe = try? Pipe.make() {
                setNonBlocking(pipe.read)
                setNonBlocking(pipe.write)
                wake = pipe
            } else {
                wake = nil
            }
        }

        var count: Int { state.withLock { $0.entries.count } }

        deinit {
            if let wake {
                Glibc.close(wake.read)
                Glibc.close(wake.write)
            }
        }

        func add(_ process: ChildProcess, limitBytes: Int, handler: @escaping @Sendable (ProcessEvent) -> Void)
            -> Handle
        {
            let (id, startThread) = state.withLock { state -> (UInt64, Bool) in
                let id = state.nextID
                state.nextID += 1
                state.entries[id] = Entry(
                    id: id, pid: process.pid, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr,
                    registration: process.registration, limitBytes: limitBytes, handler: handler)
                defer { state.isRunning = true }
                return (id, !state.isRunning)
            }
            if startThread {
                let thread = Thread { [self] in
                    CProcess_name_thread("nse-processes")
                    run()
                }
                thread.start()
            }
            signal()
            return Handle(id: id, pid: process.pid)
        }

        func update(_ id: UInt64, _ change: (inout Entry) -> Void) {
            state.withLock { state in
                if var entry = state.entries[id] {
                    change(&entry)
                    state.entries[id] = entry
                }
            }
            signal()
        }

        /// Signals the group only while the process is unreaped (under the lock that reaping takes): a
        /// zombie still holds its pid and group id, a reaped process's may already name another process.
        func kill(_ id: UInt64) {
            state.withLock { state in
                if let entry = state.entries[id] { ChildProcess.killGroup(entry.pid) }
                state.checkSoon = true
            }
            signal()
        }

        func stop() {
            state.withLock { state in
                state.isStopped = true
                for entry in state.entries.values { ChildProcess.killGroup(entry.pid) }
            }
            signal()
        }

        private func signal() {
            guard let wake else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
        }

        private static func now() -> UInt64 { MonotonicClock.nanoseconds() }

        private enum Stream { case stdin, stdout, stderr }

        private func run() {
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

        /// Polls every process for its exit, and samples memory when `sample` is set.
        private func check(sample: Bool) {
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
}
