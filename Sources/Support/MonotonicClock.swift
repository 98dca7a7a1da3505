// APNs Sandbox — the one monotonic time source.
#if canImport(Glibc)
import Glibc
#endif

/// Monotonic time: `CLOCK_MONOTONIC` in nanoseconds since an arbitrary origin (boot, on Linux).
///
/// Only differences are meaningful, within one run of the process; wall-clock jumps do not move it.
/// Every monotonic reading in the sandbox comes from here: event-loop timers and connection timeouts,
/// ``SandboxClock/monotonicNanoseconds`` of the system clock, the store's timings, the process reactor's
/// ticks. It is the clock `DispatchTime.now()` reads on Linux (libdispatch's `_dispatch_uptime()` is
/// `clock_gettime(CLOCK_MONOTONIC)`), so a deadline from here can arm a `DispatchTime(uptimeNanoseconds:)`.
public enum MonotonicClock {
    /// Nanoseconds of `CLOCK_MONOTONIC`.
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// Seconds of `CLOCK_MONOTONIC`, for durations reported in seconds.
    public static func seconds() -> Double {
        Double(nanoseconds()) / 1e9
    }
}
