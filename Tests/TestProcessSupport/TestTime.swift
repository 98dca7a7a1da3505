// APNs Sandbox — time bounds of tests, longer under a sanitizer.
import Support
import Testing

/// How long tests wait and how fast they must be. The suite's bounds are set for a plain debug build on 2 cores;
/// under ThreadSanitizer the whole suite ran 2× slower (314 s against 161 s) and single server starts far slower,
/// under AddressSanitizer ~1.5×: `scripts/sanitize` runs are about memory and threads, not speed, so there the
/// common time bounds (`ChildProcess.finish` waits, suites' time limits, a few timings) are 3× (docs/robustness.md).
public enum TestTime {
    /// 3 in a build with ThreadSanitizer or AddressSanitizer, else 1.
    public static let scale: Double = Sanitizer.thread || Sanitizer.address ? 3 : 1

    /// `seconds` times ``scale``.
    public static func seconds(_ seconds: Double) -> Double { seconds * scale }

    /// An upper bound for a real-time timeout of `seconds` (an idle or request timeout, a handshake's, a drain's
    /// grace: sockets stay real time) to have fired, as a test measures it while the suite runs in parallel: the
    /// timeout plus `slack` seconds for a loaded machine (the server's timer and the test's thread may each run
    /// late), the slack scaled. With the default 4 s, a plain build's bound for a 1 s timeout (5 s) stays below the
    /// limits' defaults (10 s for requests, 300 s idle). The lower bound is the timeout itself, measured from before
    /// the connection or the request (the server's timer cannot start earlier; a late test thread only adds to it).
    public static func timeoutBound(_ seconds: Double, slack: Double = 4) -> Double { seconds + slack * scale }
}

extension Trait where Self == TimeLimitTrait {
    /// `.timeLimit(.minutes(minutes))`, times ``TestTime/scale`` under a sanitizer.
    public static func scaledTimeLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(minutes * Int(TestTime.scale)))
    }
}
