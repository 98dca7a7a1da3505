// APNs Sandbox — real time, with every timer on one dispatch queue.
import Dispatch
import Support
import Synchronization

/// The real clock: wall time from ``WallClock``, monotonic time from ``MonotonicClock`` (CLOCK_MONOTONIC),
/// and timers driven by a single one-shot `DispatchSourceTimer` on one serial queue (no thread per timer).
///
/// Deadlines are kept in monotonic time, so wall-clock jumps neither fire nor delay timers. Tasks run
/// one at a time on the clock's queue: a task that blocks delays the others, so long work should hop to
/// another queue.
public final class SystemClock: SandboxClock {
    private struct State {
        var timers = TimerQueue<Int64, @Sendable () -> Void>()
        /// The deadline (monotonic ns) the dispatch timer is armed for; nil when idle.
        var armedFor: Int64?
    }

    private let timer: ClockQueue
    /// A class so that cancellation handles can hold on to the timers.
    private final class Storage: Sendable {
        let state = Locked(State())
    }

    private let storage = Storage()

    /// A clock whose tasks run on a serial queue with this label.
    public init(label: String = "apns-sandbox.clock") {
        timer = ClockQueue(label: label)
        timer.activate { [weak self] in self?.fire() }
    }

    deinit {
        timer.cancel()
    }

    public var nowMilliseconds: Int64 { WallClock.milliseconds() }

    public var monotonicNanoseconds: UInt64 { MonotonicClock.nanoseconds() }

    /// Pending tasks (scheduled, neither run nor cancelled).
    public var pendingTaskCount: Int { storage.state.withLock { $0.timers.count } }

    @discardableResult
    public func schedule(afterMilliseconds: Int64, _ task: @escaping @Sendable () -> Void) -> ScheduledTask {
        let delay = max(0, min(afterMilliseconds, Int64.max / 4_000_000))
        return schedule(deadline: ClockQueue.monotonicNow + delay * 1_000_000, task)
    }

    @discardableResult
    public func schedule(
        atMonotonicNanoseconds deadline: UInt64, _ task: @escaping @Sendable () -> Void
    ) -> ScheduledTask {
        schedule(deadline: Int64(clamping: deadline), task)
    }

    private func schedule(deadline: Int64, _ task: @escaping @Sendable () -> Void) -> ScheduledTask {
        let id = storage.state.withLock { [timer] state in
            let id = state.timers.insert(deadline: deadline, task)
            if state.armedFor.map({ deadline < $0 }) ?? true {
                state.armedFor = deadline
                timer.arm(at: deadline)
            }
            return id
        }
        return ScheduledTask { [storage] in storage.state.withLock { $0.timers.remove(id) } }
    }

    /// On the clock's queue: runs every due task, then arms the timer for the next deadline.
    private func fire() {
        while true {
            let now = ClockQueue.monotonicNow
            let task = storage.state.withLock { [timer] state -> (@Sendable () -> Void)? in
                if let (_, task) = state.timers.popDue(notAfter: now) { return task }
                state.armedFor = state.timers.earliestDeadline()
                if let next = state.armedFor { timer.arm(at: next) }
                return nil
            }
            guard let task else { return }
            task()
        }
    }
}
