// APNs Sandbox — a clock that moves only when a test moves it.
import Support
import Synchronization

/// A clock for tests: time stands still until ``advance(byMilliseconds:)``, which runs the tasks that
/// fall due, in deadline order (ties in scheduling order), synchronously on the caller's thread.
///
/// While a task runs, ``nowMilliseconds`` reads as that task's deadline, so work it triggers sees the time
/// it was due. Tasks scheduled by a running task run in the same `advance` call if they fall due within
/// it. Monotonic time moves with wall time (1 ms = 1,000,000 ns) from an arbitrary origin.
public final class ManualClock: SandboxClock {
    private struct State {
        var now: Int64
        var timers = TimerQueue<Int64, @Sendable () -> Void>()
    }

    /// A class so that cancellation handles can hold on to the timers.
    private final class Storage: Sendable {
        let state: Locked<State>
        init(_ state: State) { self.state = Locked(state) }
    }

    private let storage: Storage
    private let origin: Int64
    private let monotonicOrigin: UInt64 = 1_000_000_000

    /// A clock that reads `nowMilliseconds` (wall-clock ms since the epoch) until advanced.
    public init(nowMilliseconds: Int64 = 1_700_000_000_000) {
        origin = nowMilliseconds
        storage = Storage(State(now: nowMilliseconds))
    }

    public var nowMilliseconds: Int64 { storage.state.withLock { $0.now } }

    public var monotonicNanoseconds: UInt64 {
        monotonicOrigin + UInt64(max(0, nowMilliseconds - origin)) * 1_000_000
    }

    /// Tasks scheduled and neither run nor cancelled.
    public var pendingTaskCount: Int { storage.state.withLock { $0.timers.count } }

    @discardableResult
    public func schedule(afterMilliseconds: Int64, _ task: @escaping @Sendable () -> Void) -> ScheduledTask {
        let id = storage.state.withLock { state in
            state.timers.insert(deadline: state.now + max(0, afterMilliseconds), task)
        }
        return ScheduledTask { [storage] in storage.state.withLock { $0.timers.remove(id) } }
    }

    @discardableResult
    public func schedule(
        atMonotonicNanoseconds deadline: UInt64, _ task: @escaping @Sendable () -> Void
    ) -> ScheduledTask {
        // Whole milliseconds, rounded up: never before the deadline.
        let elapsed = deadline > monotonicOrigin ? (deadline - monotonicOrigin + 999_999) / 1_000_000 : 0
        let wall = origin + Int64(clamping: elapsed)
        let id = storage.state.withLock { state in state.timers.insert(deadline: wall, task) }
        return ScheduledTask { [storage] in storage.state.withLock { $0.timers.remove(id) } }
    }

    /// Moves time forward by `milliseconds` (at least 0), running every task that falls due on the way.
    public func advance(byMilliseconds milliseconds: Int64) {
        let target = storage.state.withLock { $0.now } + max(0, milliseconds)
        while let task = storage.state.withLock({ state -> (@Sendable () -> Void)? in
            guard let (deadline, task) = state.timers.popDue(notAfter: target) else {
                state.now = target
                return nil
            }
            state.now = max(state.now, deadline)
            return task
        }) {
            task()
        }
    }

    /// Moves time forward to `milliseconds` (no-op when that is in the past), running due tasks.
    public func advance(toMilliseconds milliseconds: Int64) {
        advance(byMilliseconds: milliseconds - nowMilliseconds)
    }
}
