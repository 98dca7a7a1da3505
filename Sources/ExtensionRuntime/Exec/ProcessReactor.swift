// APNs Sandbox — one thread that does all exec extension I/O: pipes, reaping, memory sampling.
import Glibc

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
///
/// ### Files
/// The facade here; the shared state in ProcessReactor+Core.swift; the thread's poll loop and pipe I/O in
/// ProcessReactor+Loop.swift; reaping and memory sampling in ProcessReactor+Reaping.swift.
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
}
