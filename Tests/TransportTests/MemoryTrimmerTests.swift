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
}
