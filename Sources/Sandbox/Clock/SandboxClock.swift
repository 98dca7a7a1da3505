// APNs Sandbox — the injected clock: wall time, monotonic time and timers.
import Synchronization

/// Where the sandbox gets its time and its timers from.
///
/// Delivery logic never reads the system clock itself: the server injects ``SystemClock`` (or, with
/// `clock.virtual` in the configuration, a ``VirtualClock`` a test can freeze, advance and set) and unit
/// tests inject ``ManualClock``, so expiry, batching and throttling windows are testable without sleeping.
public protocol SandboxClock: Sendable {
    /// Wall-clock milliseconds since the Unix epoch (what records and `apns-expiration` use).
    var nowMilliseconds: Int64 { get }
    /// Monotonic nanoseconds: only differences are meaningful, within one run of the process.
    var monotonicNanoseconds: UInt64 { get }
    /// Runs `task` once, no earlier than `afterMilliseconds` from now (negative values count as 0).
    ///
    /// Tasks never run on the caller's stack inside `schedule`, and never while the clock holds a lock,
    /// so a task may schedule or cancel other tasks.
    /// - Returns: A handle that cancels the task if it has not started yet.
    @discardableResult
    func schedule(afterMilliseconds: Int64, _ task: @escaping @Sendable () -> Void) -> ScheduledTask
    /// Runs `task` once, when ``monotonicNanoseconds`` reaches `deadline` (soon, when it has already).
    ///
    /// For a follow-up anchored to when an earlier timer was due rather than to when the work it triggered
    /// ran (a grace period from the end of the budget): a clock that jumps runs both in one jump.
    /// - Returns: A handle that cancels the task if it has not started yet.
    @discardableResult
    func schedule(atMonotonicNanoseconds deadline: UInt64, _ task: @escaping @Sendable () -> Void) -> ScheduledTask
    /// Tasks scheduled and neither run nor cancelled.
    var pendingTaskCount: Int { get }
}

/// A task handed to ``SandboxClock/schedule(afterMilliseconds:_:)``; cancel it to drop it.
public final class ScheduledTask: Sendable {
    private let cancelled = Atomic<Bool>(false)
    private let onCancel: @Sendable () -> Void

    /// A handle whose `cancel()` marks it cancelled and then calls `onCancel` (once).
    public init(onCancel: @escaping @Sendable () -> Void = {}) {
        self.onCancel = onCancel
    }

    /// True once ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Drops the task if it has not started; a running or finished task is unaffected. Idempotent.
    public func cancel() {
        guard cancelled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        onCancel()
    }
}
