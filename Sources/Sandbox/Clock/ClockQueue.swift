// APNs Sandbox — the dispatch side of a sandbox clock: one serial queue, one one-shot timer on it.
import Dispatch
import Support

/// One serial queue and one one-shot `DispatchSourceTimer` on it (no thread per timer): what ``SystemClock``
/// and ``VirtualClock`` arm for the earliest deadline of their ``TimerQueue``.
///
/// `@unchecked Sendable`: `DispatchSource` methods (`schedule`, `cancel`, `setEventHandler`, `activate`) and
/// `DispatchQueue.getSpecific` are documented thread-safe, but the Linux overlay does not mark them `Sendable`;
/// the stored values never change after `init`.
struct ClockQueue: @unchecked Sendable {
    let queue: DispatchQueue
    private let source: any DispatchSourceTimer
    private let key = DispatchSpecificKey<Bool>()

    init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: true)
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .distantFuture)
    }

    /// Sets what runs (on the queue) when the timer fires, and activates the timer. Call once.
    func activate(onFire handler: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: handler)
        source.activate()
    }

    /// Arms the one-shot timer for a real monotonic deadline in nanoseconds (``MonotonicClock``'s, which is the
    /// clock of `DispatchTime(uptimeNanoseconds:)` on Linux); a deadline in the past fires at once.
    func arm(at deadline: Int64) {
        let when = DispatchTime(uptimeNanoseconds: UInt64(max(1, deadline)))
        source.schedule(deadline: when, leeway: .milliseconds(1))
    }

    /// Nothing to fire for.
    func disarm() {
        source.schedule(deadline: .distantFuture)
    }

    func cancel() {
        source.cancel()
    }

    /// True on the queue (inside a task or a ``sync(_:)`` block).
    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    /// Runs `body` on the queue and returns its result; inline when already on it (a task may call it).
    func sync<T>(_ body: () -> T) -> T {
        isCurrent ? body() : queue.sync(execute: body)
    }

    /// Real monotonic nanoseconds as the timer counts them.
    static var monotonicNow: Int64 { Int64(clamping: MonotonicClock.nanoseconds()) }
}
