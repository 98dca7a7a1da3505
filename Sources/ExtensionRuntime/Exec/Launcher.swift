// APNs Sandbox — where exec extensions' processes are started: a few threads of their own, a bounded backlog.
import CProcess
import Dispatch
import Foundation
import Support
import Synchronization

/// Starts exec extensions' processes off the worker queues, a bounded number at a time, from threads that
/// live as long as the runtime.
///
/// ### Why
/// A spawn blocks its thread until the child has exec'd (about 1 ms on a busy 2-core machine). When
/// the worker queues spawned, a burst of 2,000 exec instances queued every instance's output handling behind
/// the spawns, and each instance waited for the spawns ahead of it with its budget running: answers written
/// within a few ms were seen 1.4–2 s after `didReceive` (BENCHMARKS.md, issue #5).
///
/// ### How
/// An exec instance takes a ``Ticket`` *before* `didReceive` (in the order asked; its budget starts when it
/// has one) and spawns on the ticket's thread. There are ``ticketsPerQueue`` tickets per thread, so a started
/// instance waits for at most that many spawns, and worker queues never spawn.
///
/// ### Why threads, not dispatch queues
/// A child is spawned with `PR_SET_PDEATHSIG(SIGKILL)`, and Linux sends it when the *thread* that created the
/// child exits (prctl(2)), not the process. Dispatch's worker threads exit after a few idle seconds, which
/// would kill healthy extensions. Each ``LauncherThread`` lives until the launcher is deinitialized, i.e.
/// with the runtime: then its children die with it, as they should.
final class Launcher: Sendable {
    /// The right to start one process on `thread`; given back with ``release()``, exactly once.
    struct Ticket: Sendable {
        let thread: LauncherThread
        fileprivate let index: Int
        fileprivate let launcher: Launcher

        func release() { launcher.release(index) }
    }

    let queueCount: Int
    let ticketsPerQueue: Int
    private let threads: [LauncherThread]

    private struct State {
        /// Tickets out, per queue.
        var out: [Int]
        var waiting = FIFOQueue<@Sendable (Ticket, Bool) -> Void>()
    }

    private let state: Locked<State>

    init(queues: Int, ticketsPerQueue: Int = 2) {
        queueCount = max(1, queues)
        self.ticketsPerQueue = max(1, ticketsPerQueue)
        threads = (0..<queueCount).map { LauncherThread(name: "nse-launcher-\($0)") }
        state = Locked(State(out: Array(repeating: 0, count: queueCount)))
    }

    deinit {
        for thread in threads { thread.stop() }
    }

    /// Instances waiting for a ticket.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Calls `body` with a ticket once one is free, in the order of the calls: on the caller's thread when
    /// one is free now (`waited` false), else later on the ticket's thread.
    func reserve(_ body: @escaping @Sendable (_ ticket: Ticket, _ waited: Bool) -> Void) {
        let index = state.withLock { state -> Int? in
            guard state.waiting.isEmpty, let index = Self.freeQueue(state.out, limit: ticketsPerQueue)
            else {
                state.waiting.append(body)
                return nil
            }
            state.out[index] += 1
            return index
        }
        if let index { body(Ticket(thread: threads[index], index: index, launcher: self), false) }
    }

    private func release(_ index: Int) {
        let next = state.withLock { state -> (@Sendable (Ticket, Bool) -> Void)? in
            guard let next = state.waiting.popFirst() else {
                state.out[index] -= 1
                return nil
            }
            return next
        }
        // The ticket passes straight to the next in line (on its thread: a chain of instances that give their
        // tickets back at once must not recurse).
        guard let next else { return }
        let ticket = Ticket(thread: threads[index], index: index, launcher: self)
        ticket.thread.execute { next(ticket, true) }
    }

    /// The queue with the fewest tickets out, if it has one left.
    private static func freeQueue(_ out: [Int], limit: Int) -> Int? {
        guard let index = out.indices.min(by: { out[$0] < out[$1] }), out[index] < limit else { return nil }
        return index
    }
}

/// One thread that runs jobs in order, from the first job until ``stop()`` (the processes it spawned die when it
/// ends). A launcher that never runs a job never starts its thread.
///
/// The thread holds only its ``Core``, never the `LauncherThread`, so deinitializing the owner can stop it.
final class LauncherThread: Sendable {
    private final class Core: Sendable {
        let jobs = Locked<(queue: FIFOQueue<@Sendable () -> Void>, isStopped: Bool, isRunning: Bool)>(
            (FIFOQueue(), false, false))
        let wakeup = DispatchSemaphore(value: 0)

        func run() {
            while true {
                wakeup.wait()
                let (job, stopped) = jobs.withLock { jobs in (jobs.queue.popFirst(), jobs.isStopped) }
                if let job {
                    job()
                } else if stopped {
                    return
                }
            }
        }
    }

    private let core = Core()
    private let name: String

    /// - Parameter name: The thread's name in the kernel (`/proc/<pid>/task/*/comm`, 15 bytes at most).
    init(name: String) {
        self.name = name
    }

    /// Runs `job` on the thread after the jobs before it (dropped once stopped); the first job starts the thread.
    func execute(_ job: @escaping @Sendable () -> Void) {
        let (queued, startsThread) = core.jobs.withLock { jobs -> (Bool, Bool) in
            guard !jobs.isStopped else { return (false, false) }
            jobs.queue.append(job)
            defer { jobs.isRunning = true }
            return (true, !jobs.isRunning)
        }
        if startsThread {
            let thread = Thread { [core, name] in
                CProcess_name_thread(name)
                core.run()
            }
            thread.start()
        }
        if queued { core.wakeup.signal() }
    }

    /// Lets the thread finish the jobs it has, then end.
    func stop() {
        core.jobs.withLock { $0.isStopped = true }
        core.wakeup.signal()
    }
}
