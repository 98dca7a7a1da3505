// APNs Sandbox — a histogram: cumulative buckets, sum and count under one short lock.
import Synchronization
import Support

/// Observations sorted into buckets (Prometheus `histogram`). `observe` holds an uncontended lock for a
/// few additions, never across I/O; the scrape copies the state under the same lock.
public final class Histogram: Sendable {
    struct State: Sendable {
        /// Per bucket (not cumulative); the last one is `+Inf`.
        var counts: [UInt64]
        var sum: Double = 0
    }

    /// Upper bounds, increasing, without `+Inf` (always added).
    public let bounds: [Double]
    private let state: Locked<State>

    public init(bounds: [Double]) {
        self.bounds = bounds
        self.state = Locked(State(counts: Array(repeating: 0, count: bounds.count + 1)))
    }

    public func observe(_ value: Double) {
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        state.withLock { state in
            state.counts[index] &+= 1
            state.sum += value
        }
    }

    /// Cumulative bucket counts (the last is `+Inf`, equal to the count) and the sum.
    public func snapshot() -> (cumulative: [UInt64], sum: Double) {
        let copy = state.withLock { $0 }
        var running: UInt64 = 0
        return (copy.counts.map { running &+= $0; return running }, copy.sum)
    }

    /// Bounds suited to durations in seconds, from 0.5 ms to a minute.
    public static let secondsBounds: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]
}
