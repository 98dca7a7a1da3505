// APNs Sandbox — where exec extensions' processes are started: a few queues of their own, a bounded backlog.
import Dispatch
import Support
import Synchronization

/// Starts exec extensions' processes off the worker queues, a bounded number at a time.
///
/// ### Why
/// `posix_spawn` blocks its thread until the child has exec'd (about 1 ms on a busy 2-core machine). When
/// the worker queues spawned, a burst of 2,000 exec instances queued every instance's output handling behind
/// the spawns, and each instance waited for the spawns ahead of it with its budget running: answers written
/// within a few ms were seen 1.4–2 s after `didReceive` (BENCHMARKS.md, issue #5).
///
/// ### How
/// An exec instance takes a ``Ticket`` *before* `didReceive` (in the order asked; its budget starts when it
/// has one) and spawns on the ticket's queue. There are ``ticketsPerQueue`` tickets per queue, so a started
/// instance waits for at most that many spawns, and worker queues never spawn.
final class Launcher: Sendable {
    /// The right to start one process on `queue`; given back with ``release()``, exactly once.
    struct Ticket: Sendable {
        let queue: DispatchQueue
        fileprivate let index: Int
        fileprivate let launcher: Launcher

        func release() { launcher.release(index) }
    }

    let queueCount: Int
    let ticketsPerQueue: Int
    private let queues: [DispatchQueue]

    private struct State {
        /// Tickets out, per queue.
        var out: [Int]
        var waiting = FIFOQueue<@Sendable (Ticket, Bool) -> Void>()
    }

    private let state: Mutex<State>

    init(queues: Int, ticketsPerQueue: Int = 2) {
        queueCount = max(1, queues)
        self.ticketsPerQueue = max(1, ticketsPerQueue)
        self.queues = (0..<queueCount).map { DispatchQueue(label: "apns-sandbox.extension.launcher-\($0)") }
        state = Mutex(State(out: Array(repeating: 0, count: queueCount)))
    }

    /// Instances waiting for a ticket.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Calls `body` with a ticket once one is free, in the order of the calls: on the caller's thread when
    /// one is free now (`waited` false), else later on the ticket's queue.
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
        if let index { body(Ticket(queue: queues[index], index: index, launcher: self), false) }
    }

    private func release(_ index: Int) {
        let next = state.withLock { state -> (@Sendable (Ticket, Bool) -> Void)? in
            guard let next = state.waiting.popFirst() else {
                state.out[index] -= 1
                return nil
            }
            return next
        }
        // The ticket passes straight to the next in line (on its queue: a chain of instances that give their
        // tickets back at once must not recurse).
        guard let next else { return }
        let ticket = Ticket(queue: queues[index], index: index, launcher: self)
        ticket.queue.async { next(ticket, true) }
    }

    /// The queue with the fewest tickets out, if it has one left.
    private static func freeQueue(_ out: [Int], limit: Int) -> Int? {
        guard let index = out.indices.min(by: { out[$0] < out[$1] }), out[index] < limit else { return nil }
        return index
    }
}
