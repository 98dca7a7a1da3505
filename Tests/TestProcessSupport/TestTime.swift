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
}

extension Trait where Self == TimeLimitTrait {
    /// `.timeLimit(.minutes(minutes))`, times ``TestTime/scale`` under a sanitizer.
    public static func scaledTimeLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(minutes * Int(TestTime.scale)))
    }
}
