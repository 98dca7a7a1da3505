// APNs Sandbox — the debounced malloc_trim after connections close.
import Dispatch
import Support
import Testing

@testable import Transport

@Suite struct MemoryTrimmerTests {
    /// A flood of closes from several threads costs one trim (plus its follow-ups while trims give memory back,
    /// at most ``MemoryTrimmer/maxFollowUps``), `delay` after the first; nothing more happens without closes.
    @Test func aFloodOfClosesCostsOneTrimSeries() async throws {
        let trimmer = MemoryTrimmer(delayNanoseconds: 200_000_000, logger: Logger(label: "test", level: .error))
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<1000 { trimmer.connectionClosed() }
        }
        #expect(trimmer.statistics.trims == 0, "not at once: the closes of a burst share the trim")
        let series = 1 + MemoryTrimmer.maxFollowUps
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while trimmer.statistics.trims == 0 && MonotonicClock.nanoseconds() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        // The series ends within its follow-ups (each 200 ms after the last).
        try await Task.sleep(nanoseconds: UInt64(series + 2) * 200_000_000 + 1_000_000_000)
        let trims = trimmer.statistics.trims
        #expect(trims >= 1 && trims <= series, "4,000 closes: \(trims) trims")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(trimmer.statistics.trims == trims, "no close, no trim")
        trimmer.connectionClosed()
        let again = MonotonicClock.nanoseconds() + 5_000_000_000
        while trimmer.statistics.trims == trims && MonotonicClock.nanoseconds() < again {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(trimmer.statistics.trims > trims, "a later close trims again")
    }

    /// A delay of 0 turns trimming off.
    @Test func aZeroDelayNeverTrims() async throws {
        let trimmer = MemoryTrimmer(delayNanoseconds: 0, logger: Logger(label: "test", level: .error))
        trimmer.connectionClosed()
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(trimmer.statistics.trims == 0)
    }
}
