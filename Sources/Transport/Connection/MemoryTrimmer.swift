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
/// ``connectionClosed(heldBytes:)`` (every close, both HTTP versions) schedules one trim `delay` later on a
/// queue of its own — only when the closing connection held at least ``thresholdBytes``
/// (``defaultThresholdBytes``, 1 MiB) at some point (``Connection/peakHeldBytes``: its output buffer's high-water mark, or what its handler still
/// held at the close): a close that freed kilobytes (a health check, one curl per push) gives glibc nothing
/// worth walking its arenas for, and under steady churn would otherwise trim once a `delay` for ever. It is
/// debounced: unless one is already scheduled, so a flood of closes costs one trim, and trims run at most once
/// per `delay`, never on an event loop. What a closed connection's work frees later (a worker finishing a
/// response nobody reads, the handler kept until then) is caught by follow-ups: a trim that gave memory back,
/// or after which less heap is in use than after the previous one (that work is still freeing what it held:
/// under load it can take longer than a few trims), schedules another `delay` later, up to ``maxFollowUps`` in
/// a row; one that found nothing while the heap in use stayed put ends the series.
/// A trim takes each arena's lock in turn (a loop allocating in that arena meanwhile waits for it) and its
/// cost grows with the free chunks it walks: measured in docs/security.md ("Memory after a peer leaves"),
/// with the RSS it gets back.
///
/// Thread-safe: the pending flag is behind a lock, the trim runs on the trimmer's serial queue.
public final class MemoryTrimmer: Sendable {
    /// How long after the first close since the last trim the next one runs.
    public let delayNanoseconds: UInt64
    /// A close schedules a trim only if its connection held at least this many bytes at some point.
    public let thresholdBytes: Int
    private let queue = DispatchQueue(label: "apns-sandbox.memory-trim", qos: .utility)
    private let state = Locked(State())
    private let logger: Logger
    private let probes: Probes

    /// What a trim does to the heap and reads of it: glibc's by default; a test's script in tests of the rule.
    struct Probes: Sendable {
        /// `malloc_trim(0)`: true when it gave memory back.
        var trim: @Sendable () -> Bool
        /// The bytes of heap in use now.
        var inUse: @Sendable () -> Int

        static let glibc = Probes(
            trim: { CLinuxSystem_malloc_trim() == 1 }, inUse: { Int(CLinuxSystem_malloc_in_use()) })
    }

    /// Trims after the first of a series of closes, while each gives memory back or the heap in use shrinks.
    public static let maxFollowUps = 10
    /// How much the heap in use must have shrunk since the previous trim for a trim that released nothing to
    /// be followed up (the work of closed connections still freeing its buffers).
    static let shrinkingBytes = 1 << 20
    /// From the first close worth a trim to the trim (and between the trims of a series): 1 s.
    public static let defaultDelayNanoseconds: UInt64 = 1_000_000_000
    /// What a closing connection must have held at some point for its close to schedule a trim: 1 MiB (the
    /// default output high watermark; a zero-window HTTP/2 peer makes one hold up to 16 MiB).
    public static let defaultThresholdBytes = 1 << 20

    private struct State {
        var isScheduled = false
        /// Follow-ups run since the last close.
        var followUps = 0
        /// The heap in use after the previous trim of the series (nil: the series starts).
        var inUseAfterLastTrim: Int?
        /// Bumped by every close that (re)starts a series: a trim that began before it leaves the baseline alone.
        var series = 0
        var trims = 0
        var nanoseconds: UInt64 = 0
    }

    /// - Parameters:
    ///   - delayNanoseconds: from the first close worth a trim to its trim; 0 turns trimming off.
    ///   - thresholdBytes: the least a closing connection must have held for its close to be worth a trim.
    public convenience init(
        delayNanoseconds: UInt64 = MemoryTrimmer.defaultDelayNanoseconds,
        thresholdBytes: Int = MemoryTrimmer.defaultThresholdBytes, logger: Logger
    ) {
        self.init(delayNanoseconds: delayNanoseconds, thresholdBytes: thresholdBytes, logger: logger, probes: .glibc)
    }

    init(delayNanoseconds: UInt64, thresholdBytes: Int = MemoryTrimmer.defaultThresholdBytes, logger: Logger, probes: Probes) {
        self.delayNanoseconds = delayNanoseconds
        self.thresholdBytes = thresholdBytes
        self.logger = logger
        self.probes = probes
    }

    /// The free space at the top of an arena glibc keeps before giving it back by itself, once
    /// ``fixAllocatorThresholds(environment:)`` ran: 4 MiB.
    public static let allocatorTrimThresholdBytes = 4 << 20

    /// Fixes glibc's trim threshold at ``allocatorTrimThresholdBytes`` — and with it the mmap threshold at its
    /// 128 KiB default — unless the environment sets either (`GLIBC_TUNABLES` with `glibc.malloc.trim_threshold`
    /// or `glibc.malloc.mmap_threshold`, `MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`: the operator's choice
    /// stands). Process-wide; `apns-sandbox serve` calls it once, before the server starts.
    ///
    /// Why: glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB) and its trim
    /// threshold to twice that, so after a peer made the server hold megabyte responses, blocks of that size
    /// come from the arenas and each arena keeps up to 64 MiB free at its top. `malloc_trim(0)` gives back the
    /// free pages inside every arena but the top only of the main one: what a worker or loop thread's arena
    /// held could stay resident (60 MB after the hostile pass of `HostileAftermathTests` in 1 of 11 CI runs).
    /// With the thresholds fixed, blocks of 128 KiB or more are mapped and unmapped by themselves, and an
    /// arena's top past 4 MiB goes back at the free that makes it.
    /// - Returns: whether the thresholds were set here.
    @discardableResult
    public static func fixAllocatorThresholds(environment: [String: String]) -> Bool {
        let tunables = environment["GLIBC_TUNABLES"] ?? ""
        let chosen = tunables.contains("glibc.malloc.trim_threshold") || tunables.contains("glibc.malloc.mmap_threshold")
            || environment["MALLOC_TRIM_THRESHOLD_"] != nil || environment["MALLOC_MMAP_THRESHOLD_"] != nil
        guard !chosen else { return false }
        return CLinuxSystem_malloc_set_trim_threshold(allocatorTrimThresholdBytes) == 1
    }

    /// A connection closed (what it held has been freed, or is being freed by the work it cancelled).
    /// - Parameter heldBytes: the most it held at some point (``Connection/peakHeldBytes``); below
    ///   ``thresholdBytes`` the close schedules nothing (a series already scheduled goes on).
    public func connectionClosed(heldBytes: Int) {
        guard delayNanoseconds > 0, heldBytes >= thresholdBytes else { return }
        let schedules = state.withLock { state in
            defer {
                state.isScheduled = true
                state.followUps = 0
                state.inUseAfterLastTrim = nil
                state.series &+= 1
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
        let series = state.withLock { state in
            state.isScheduled = false
            return state.series
        }
        let start = MonotonicClock.nanoseconds()
        let released = probes.trim()
        let took = MonotonicClock.nanoseconds() &- start
        let inUse = probes.inUse()
        let followsUp = state.withLock { state in
            state.trims += 1
            state.nanoseconds &+= took
            // A close during the walk started a new series: its first trim is already scheduled, without a baseline.
            guard state.series == series else { return false }
            let shrinking = state.inUseAfterLastTrim.map { inUse < $0 - Self.shrinkingBytes } ?? false
            state.inUseAfterLastTrim = inUse
            guard released || shrinking, !state.isScheduled, state.followUps < Self.maxFollowUps else { return false }
            state.followUps += 1
            state.isScheduled = true
            return true
        }
        if followsUp { schedule() }
        logger.debug(
            "freed memory given back (malloc_trim)",
            [("microseconds", "\(took / 1000)"), ("released", "\(released)"), ("inUseBytes", "\(inUse)")])
    }
}
