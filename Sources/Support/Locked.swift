// APNs Sandbox — the one lock: Synchronization's Mutex, made visible to ThreadSanitizer.
import CLinuxSystem
import Synchronization

/// A value reached only under a lock: `Synchronization.Mutex`, which it wraps, with the same `withLock`.
///
/// Why not `Mutex` itself: on Linux a contended `Mutex` changes hands inside the kernel (`FUTEX_LOCK_PI` /
/// `FUTEX_UNLOCK_PI`), where ThreadSanitizer cannot see it, so a `--sanitize=thread` run reports whatever a
/// contended lock protects as a data race (docs/robustness.md). In such a build each `withLock` also tells
/// ThreadSanitizer that this lock was taken and released (`__tsan_acquire` / `__tsan_release` on a token of
/// its own); in every other build the token is nil and that costs a predictable branch.
public struct Locked<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    // @unchecked: `Mutex` is Sendable for any value (it takes and gives `sending` values); the token is an
    // address that is never read or written.
    @usableFromInline let mutex: Mutex<Value>
    @usableFromInline let token: UnsafeMutableRawPointer?

    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
        token = Sanitizer.thread ? UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1) : nil
    }

    deinit {
        token?.deallocate()
    }

    /// Runs `body` on the value while holding the lock.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            if let token { CLinuxSystem_tsan_acquire(token) }
            defer { if let token { CLinuxSystem_tsan_release(token) } }
            return try body(&value)
        }
    }

    /// Runs `body` on the value if the lock is free now; nil (without waiting) if it is held.
    @inlinable
    public borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            if let token { CLinuxSystem_tsan_acquire(token) }
            defer { if let token { CLinuxSystem_tsan_release(token) } }
            return try body(&value)
        }
    }
}
