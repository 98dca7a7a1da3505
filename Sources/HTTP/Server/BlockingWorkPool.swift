// APNs Sandbox — worker threads for handlers that may block, so event loops never do.
import Dispatch
import Foundation
import Support
import Synchronization
import Transport

/// A fixed set of worker threads running ``HandlerResult/blocking(_:)`` work in arrival order (and whatever
/// else must not run on an event loop: the first check of a long-poll, through `submit`).
///
/// The workers run at nice 5: under load (a client making the server list its store over and over)
/// they yield the CPU to the event loops, so requests that need no store (pushes, `/healthz`) stay fast.
///
/// Connections bound how much they submit (a few jobs each, only while their output drains), so the
/// queue holds at most a few jobs per connection; a job whose request was cancelled while it waited is
/// skipped. Threads start on first use and end at ``shutdown()``.
///
/// Thread-safe: the queue lives in a `Locked`, workers wait on a counting semaphore.
public final class BlockingWorkPool: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        var isShutDown = false
    }

    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    let threadCount: Int
    static let niceness: Int32 = 5

    /// - Parameter threads: worker threads; 0 = one per core (at least 2).
    public init(threads: Int = 0) {
        self.threadCount = threads > 0 ? threads : max(2, ProcessInfo.processInfo.activeProcessorCount)
    }

    /// Jobs waiting for a worker.
    var queuedJobs: Int { state.withLock { $0.jobs.count - $0.head } }

    /// Runs `job` on a worker thread (after the jobs submitted before it). Dropped after shutdown.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        let startThread = state.withLock { state -> Bool in
            guard !state.isShutDown else { return false }
            state.jobs.append(job)
            guard state.threads < threadCount else { return false }
            state.threads += 1
            return true
        }
        if startThread {
            let thread = Thread { [self] in
                CurrentThread.setName("blocking-work")
                CurrentThread.setNiceness(Self.niceness)
                work()
            }
            thread.start()
        }
        available.signal()
    }

    /// Ends the workers once the jobs already queued have run.
    public func shutdown() {
        let threads = state.withLock { state -> Int in
            state.isShutDown = true
            return state.threads
        }
        for _ in 0..<threads { available.signal() }
    }

    private enum Next {
        case run(@Sendable () -> Void)
        case exit
        case idle
    }

    private func work() {
        while true {
            available.wait()
            let next = state.withLock { state -> Next in
                guard state.head < state.jobs.count else { return state.isShutDown ? .exit : .idle }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: state.jobs.count <= 1024)
                    state.head = 0
                }
                return .run(job)
            }
            switch next {
            case .run(let job): job()
            case .exit: return
            case .idle: continue
            }
        }
    }
}
