// APNs Sandbox — a one-shot value handed from one thread to the threads waiting for it.
import Dispatch
import Synchronization
import Support

/// A value set once and awaited by blocking threads (never use it from the Swift concurrency pool
/// for long waits: it blocks the calling thread).
final class Latch<Value: Sendable>: Sendable {
    private let value = Locked<Value?>(nil)
    private let semaphore = DispatchSemaphore(value: 0)

    /// Stores the value and wakes every waiter. Only the first call has an effect.
    func fulfill(_ newValue: Value) {
        let isFirst = value.withLock { stored in
            guard stored == nil else { return false }
            stored = newValue
            return true
        }
        if isFirst { semaphore.signal() }
    }

    /// Blocks until ``fulfill(_:)`` has run, then returns the value.
    func wait() -> Value {
        semaphore.wait()
        // Pass the wake-up on, so every waiter (and every later call) returns.
        semaphore.signal()
        guard let stored = value.withLock({ $0 }) else {
            preconditionFailure("Latch woke up without a value")
        }
        return stored
    }
}
