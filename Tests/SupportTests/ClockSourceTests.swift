// APNs Sandbox — the monotonic and wall-clock readings everything else builds on.
import Foundation
import Support
import Testing

@Suite struct ClockSourceTests {
    /// Monotonic time never goes back and measures a sleep.
    @Test func monotonicClockMovesForward() {
        let start = MonotonicClock.nanoseconds()
        usleep(20_000)
        let end = MonotonicClock.nanoseconds()
        #expect(end >= start + 19_000_000)
        #expect(MonotonicClock.seconds() >= Double(end) / 1e9)
    }

    /// Wall time is Unix milliseconds, rounded down: within a few ms of Foundation's `Date`.
    @Test func wallClockIsUnixMilliseconds() {
        let before = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        let now = WallClock.milliseconds()
        let after = Int64((Date().timeIntervalSince1970 * 1000).rounded(.up))
        #expect(now >= before && now <= after)
    }
}
