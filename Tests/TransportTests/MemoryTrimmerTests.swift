// APNs Sandbox — the debounced malloc_trim after connections close.
import Dispatch
import Support
import Testing

@testable import Transport

@Suite struct MemoryTrimmerTests {
    private static let held = MemoryTrimmer.defaultThresholdBytes

    private func makeTrimmer(delay: UInt64 = 200_000_000) -> MemoryTrimmer {
        MemoryTrimmer(delayNanoseconds: delay, logger: Logger(label: "test", level: .error))
    }

    /// Waits up to 5 s for the trimmer's first trim after `trims`.
    private func awaitTrim(_ trimmer: MemoryTrimmer, after trims: Int) async throws {
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while trimmer.statistics.trims == trims && MonotonicClock.nanoseconds() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    /// Steady churn of connections that held little (health checks, a connection per push) never trims: the
    /// arenas' locks are not taken once a `delay` for ever for kilobytes.
    @Test func aFloodOfSmallClosesCausesNoTrim() async throws {
        let trimmer = makeTrimmer()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for index in 0..<1000 { trimmer.connectionClosed(heldBytes: index % 2 == 0 ? 0 : Self.held - 1) }
        }
        try await Task.sleep(nanoseconds: 4 * 200_000_000)
        #expect(trimmer.statistics.trims == 0, "4,000 closes below the threshold: no trim")
    }

    /// A flood of closes from several threads, each of a connection that held its megabyte, costs one trim (plus
    /// its follow-ups while trims give memory back, at most ``MemoryTrimmer/maxFollowUps``), `delay` after the
    /// first; nothing more happens without closes; one big close among small ones trims again.
    @Test func aFloodOfBigClosesCostsOneTrimSeries() async throws {
        let trimmer = makeTrimmer()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<1000 { trimmer.connectionClosed(heldBytes: Self.held) }
        }
        #expect(trimmer.statistics.trims == 0, "not at once: the closes of a burst share the trim")
        let series = 1 + MemoryTrimmer.maxFollowUps
        try await awaitTrim(trimmer, after: 0)
        // The series ends within its follow-ups (each 200 ms after the last): waits until 600 ms pass without a trim.
        var trims = trimmer.statistics.trims
        let deadline = MonotonicClock.nanoseconds() + UInt64(series) * 1_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            try await Task.sleep(nanoseconds: 600_000_000)
            let now = trimmer.statistics.trims
            if now == trims { break }
            trims = now
        }
        #expect(trims >= 1 && trims <= series, "4,000 closes: \(trims) trims")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(trimmer.statistics.trims == trims, "no close, no trim")
        for _ in 0..<100 { trimmer.connectionClosed(heldBytes: 4096) }
        trimmer.connectionClosed(heldBytes: 16 << 20)
        try await awaitTrim(trimmer, after: trims)
        #expect(trimmer.statistics.trims > trims, "a later big close trims again")
    }

    /// A delay of 0 turns trimming off.
    @Test func aZeroDelayNeverTrims() async throws {
        let trimmer = makeTrimmer(delay: 0)
        trimmer.connectionClosed(heldBytes: 16 << 20)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(trimmer.statistics.trims == 0)
    }

    /// The follow-up rule, on a scripted heap: each trim takes the next step of `script` (whether it gave memory
    /// back, and the heap in use after it). Returns the trims of the series a single big close starts.
    private func series(_ script: [(released: Bool, inUse: Int)]) async throws -> Int {
        let step = Locked(0)
        let trimmer = MemoryTrimmer(
            delayNanoseconds: 5_000_000, logger: Logger(label: "test", level: .error),
            probes: .init(
                trim: { step.withLock { step in script[min(step, script.count - 1)].released } },
                inUse: {
                    step.withLock { step in
                        defer { step += 1 }
                        return script[min(step, script.count - 1)].inUse
                    }
                }))
        trimmer.connectionClosed(heldBytes: Self.held)
        // Trims 5 ms apart: a series of at most 11 is over well within a second; wait until 300 ms pass without one.
        var trims = -1
        while trimmer.statistics.trims != trims {
            trims = trimmer.statistics.trims
            try await Task.sleep(nanoseconds: 300_000_000)
        }
        return trims
    }

    /// A trim that gave memory back is followed up; so is one after which the heap in use shrank by more than a
    /// MiB since the previous trim (closed connections' work still freeing); one that released nothing while the
    /// heap stayed put (or the first, with no previous trim) ends the series; a series has at most
    /// 1 + ``MemoryTrimmer/maxFollowUps`` trims.
    @Test func followUpsWhileMemoryComesBack() async throws {
        let mib = 1 << 20
        #expect(try await series([(false, 100 * mib)]) == 1, "nothing released, no baseline: one trim")
        #expect(try await series([(true, 100 * mib), (true, 100 * mib), (false, 100 * mib)]) == 3)
        #expect(try await series([(true, 100 * mib), (false, 90 * mib), (false, 80 * mib), (false, 80 * mib)]) == 4,
                "released, then shrinking by 10 MiB twice, then flat")
        #expect(try await series([(true, 100 * mib), (false, 100 * mib - mib / 2)]) == 2,
                "half a MiB less is not shrinking")
        #expect(try await series([(true, 100 * mib)]) == 1 + MemoryTrimmer.maxFollowUps, "always releasing: capped")
    }

    /// `serve` fixes glibc's thresholds unless the operator chose one (the environment's tunables stand).
    @Test func theAllocatorsThresholdsAreFixedUnlessTheEnvironmentChoseThem() {
        for chosen in [
            ["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"],
            ["GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=65536"],
            ["MALLOC_TRIM_THRESHOLD_": "1048576"], ["MALLOC_MMAP_THRESHOLD_": "65536"],
        ] {
            #expect(!MemoryTrimmer.fixAllocatorThresholds(environment: chosen), "\(chosen)")
        }
        #expect(MemoryTrimmer.fixAllocatorThresholds(environment: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=2"]))
        #expect(MemoryTrimmer.fixAllocatorThresholds(environment: [:]))
    }
}
