// APNs Sandbox — monotonic time for request timing.
import Transport

enum MonotonicNow {
    static func nanoseconds() -> UInt64 { MonotonicClock.nanoseconds() }
}
