// APNs Sandbox — giving the memory closed connections held back to the kernel (glibc's malloc_trim), debounced.
import CLinuxSystem
import Dispatch
import Support

/// Hands freed heap memory back to the system some time after connections close.
///
/// glibc keeps what a program frees in its arenas for reuse: after a peer made connections hold their
/// output budgets (a client that never opens its flow-control window: up to 16 MiB a connection) and left,
/// the buffers are freed but the process's RSS stays where the peer took it (50 such connections: 590 MB,
/// still 513–526 MB a minute later). Large buffers do not go back by themselves either: glibc raises its
/// mmap threshold to the size of each large block it frees (up to 32 MiB), so later ones come from the
/// arenas. `malloc_trim(0)` gives back the free top of every arena and every free page inside them.
///
/// ``connectionClosed()`` (every close, both HTTP versions) schedules one trim `delay` later on a queue of its
/// own, unless one is already scheduled: a flood of closes costs one trim, and trims run at most once per
/// `delay`, never on an event loop. What a closed connection's work frees later (a worker finishing a
/// response nobody reads, the handler kept until then) is caught by follow-ups: a trim that gave memory back
/// schedules another `delay` later, up to ``maxFollowUps`` in a row; one that found nothing ends the series. A trim takes each arena's lock in turn (a loop allocating in that
/// arena meanwhile waits for it) and its cost grows with the free chunks it walks: measured in
/// docs/security.md (Limits), with the RSS it gets back.
///
/// Thread-safe: the pending flag is behind a lock, the trim runs on the trimmer's serial queue.
public final class MemoryTrimmer: Sendable {
    /// How long after the first close since the last trim the next one runs.
    public let delayNanoseconds: UInt64
    private let queue = DispatchQueue(label: "apns-sandbox.memory-trim", qos: .utility)
    private let state = Locked(State())
    private let logger: Logger

    /// Trims after the first of a series of closes, while each gives memory back.
    public static let maxFollowUps = 4

    private struct State {
        var isScheduled = false
        /// Follow-ups run since the last close.
        var followUps = 0
        var trims = 0
        var nanoseconds: UInt64 = 0
    }

    /// - Parameter delayNanoseconds: from the first close to its trim (1 s by default); 0 turns trimming off.
    public init(delayNanoseconds: UInt64 = 1_000_000_000, logger: Logger) {
        self.delayNanoseconds = delayNanoseconds
        self.logger = logger
    }

    /// A connection closed (what it held has been freed, or is being freed by the work it cancelled).
    public func connectionClosed() {
        guard delayNanoseconds > 0 else { return }
        let schedules = state.withLock { state in
            defer {
                state.isScheduled = true
                state.followUps = 0
            }
            return !state.isScheduled
        }
        if schedules { schedule() }
    }

    private func schedule() {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delayNanoseconds))) { [self] in trim() }
    }

    /// Trims done so far and the time they took in all (nanoseconds).
    public var statistics: (trims: Int, nanoseconds: UInt64) {
        state.withLock { ($0.trims, $0.nanoseconds) }
    }

    private func trim() {
        // Cleared first: a close during the trim schedules the next one (its memory may be freed after the walk).
        state.withLock { $0.isScheduled = false }
        let start = MonotonicClock.nanoseconds()
        let released = CLinuxSystem_malloc_trim() == 1
        let took = MonotonicClock.nanoseconds() &- start
        let followsUp = state.withLock { state in
            state.trims += 1
            state.nanoseconds &+= took
            guard released, !state.isScheduled, state.followUps < Self.maxFollowUps else { return false }
            state.followUps += 1
            state.isScheduled = true
            return true
        }
        if followsUp { schedule() }
        logger.debug(
            "freed memory given back (malloc_trim)",
            [("microseconds", "\(took / 1000)"), ("released", "\(released)")])
    }
}
