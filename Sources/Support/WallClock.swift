// APNs Sandbox — the one wall-clock reading, for code that has no injected clock.
#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock time: `CLOCK_REALTIME` in whole milliseconds since the Unix epoch, rounded down.
///
/// Code with an injected clock (records, events, webhook timestamps, retention cutoffs) reads
/// `SandboxClock.nowMilliseconds` instead; the system clock's is this function. It is read directly only
/// where no clock exists: log timestamps, certificate validity at start-up, the HTTP `date` header, the
/// store's row stamps, the CLI tools. Seconds are `milliseconds() / 1000` (also rounded down, for any
/// time after 1970), so every wall-clock value in the sandbox is truncated the same way.
public enum WallClock {
    /// Milliseconds since 1970-01-01T00:00:00Z, rounded down.
    public static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
