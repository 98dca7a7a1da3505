// APNs Sandbox — the guardian process: kills exec extensions' process groups the moment the server dies.
import CProcess
import Glibc
import Synchronization
import Support

/// A small process forked from the server (`CProcess_guardian_start`) that kills every extension process
/// group it knows when the server dies (see ``ProcessRegistry`` for where it fits).
///
/// ### How it learns and acts
/// Each child reports its own process group on the guardian's pipe before it execs (so the guardian knows
/// the group before the program can start anything); the server reports groups gone after reaping them
/// (``forget(_:)``). The pipe's only write end is the server's, close-on-exec, so it reaches end-of-file when
/// the server dies in any way: then the guardian SIGKILLs every group it still knows and exits. It pins each
/// group's leader with a pidfd and signals the group by identity, never by a number that may name another
/// group by then.
///
/// ### Lifetime
/// ``shared`` is the process's one guardian, forked on the first exec spawn and shared by every runtime of
/// the process (a fork of a big process is not free: copy-on-write of its whole address space). It lives as
/// long as the process. Other instances (tests) stop their guardian in `deinit`. A guardian that was killed
/// is replaced on the next spawn and told about every process still registered.
///
/// Thread-safe.
final class ProcessGuardian: Sendable {
    /// The process's guardian.
    static let shared = ProcessGuardian()

    private struct Running {
        var pid: pid_t
        var descriptor: Int32
    }

    private struct State {
        var running: Running?
        /// Registered leaders and their start times: what a replacement must be told.
        var live: [pid_t: UInt64] = [:]
        /// Pipes of guardians that died: kept open until the end, since a spawn on another thread may still
        /// be handing one to its child (a reused descriptor number would get the child's message).
        var retired: [Int32] = []
        /// It could not be started: no second try (PDEATHSIG and the ledger still hold).
        var failed = false
    }

    private let state = Locked(State())

    init() {}

    deinit {
        let (running, retired) = state.withLock { ($0.running, $0.retired) }
        for fd in retired { close(fd) }
        if let running { Self.stop(running) }
    }

    /// The pipe for the next spawn's child, starting (or replacing) the guardian when needed; -1 when there
    /// is none.
    func descriptor() -> Int32 {
        state.withLock { state -> Int32 in
            if let running = state.running {
                var status: Int32 = 0
                guard waitpid(running.pid, &status, WNOHANG) == running.pid else { return running.descriptor }
                state.retired.append(running.descriptor)
                state.running = nil
            }
            guard !state.failed else { return -1 }
            var descriptor: Int32 = -1
            let pid = CProcess_guardian_start(&descriptor)
            guard pid > 0 else {
                state.failed = true
                return -1
            }
            state.running = Running(pid: pid, descriptor: descriptor)
            for (pid, start) in state.live { CProcess_guardian_add(descriptor, pid, start) }
            return descriptor
        }
    }

    /// The guardian's pid while one runs (for tests).
    var pid: pid_t? { state.withLock { $0.running?.pid } }

    /// A spawned leader (its child has told the guardian itself): remembered for a replacement guardian.
    func registered(_ pid: pid_t, start: UInt64) {
        state.withLock { $0.live[pid] = start }
    }

    /// The group led by `pid` is gone (reaped, killed).
    func forget(_ pid: pid_t) {
        let descriptor = state.withLock { state -> Int32 in
            state.live[pid] = nil
            return state.running?.descriptor ?? -1
        }
        if descriptor >= 0 { CProcess_guardian_forget(descriptor, pid) }
    }

    private static func stop(_ running: Running) {
        // End of file: it kills what it still knows and exits.
        close(running.descriptor)
        var status: Int32 = 0
        while waitpid(running.pid, &status, 0) < 0, errno == EINTR {}
    }
}
