// APNs Sandbox — a token bucket: a burst allowance refilled at a steady rate.

/// A rate limit that allows bursts: up to `capacity` tokens, refilled at `perSecond`; each event takes
/// some. Time comes in as monotonic nanoseconds, so tests need no clock.
///
/// A value type with no thread affinity; confine each instance to its connection.
struct TokenBucket: Sendable, Equatable {
    let capacity: Double
    let perSecond: Double
    private(set) var tokens: Double
    private var updatedAt: UInt64

    /// A full bucket at `now`.
    init(capacity: Double, perSecond: Double, now: UInt64) {
        self.capacity = max(0, capacity)
        self.perSecond = max(0, perSecond)
        self.tokens = self.capacity
        self.updatedAt = now
    }

    /// Takes `count` tokens if the bucket holds them.
    /// - Returns: false when the bucket is empty: the limit is exceeded (nothing is taken).
    mutating func take(_ count: Double = 1, now: UInt64) -> Bool {
        refill(now: now)
        guard tokens >= count else { return false }
        tokens -= count
        return true
    }

    private mutating func refill(now: UInt64) {
        guard now > updatedAt else { return }
        tokens = min(capacity, tokens + Double(now - updatedAt) / 1e9 * perSecond)
        updatedAt = now
    }
}
