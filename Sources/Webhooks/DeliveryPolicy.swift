// APNs Sandbox — when to try a webhook delivery again, and when to stop trying an endpoint for a while.

/// How the dispatcher delivers: timeouts, the retry schedule, concurrency and the circuit breaker.
public struct WebhookSettings: Sendable, Equatable {
    /// Delay before each attempt, from the previous failure (the first entry is the first attempt's
    /// delay, normally 0). Default (Standard Webhooks' suggestion): immediately, 5 s, 5 min, 30 min,
    /// 2 h, 5 h, 10 h — seven attempts; after the last failure the delivery is `failed`.
    public var retryScheduleMilliseconds: [Int64] = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]
    /// Each delay is multiplied by a random factor in 1 ± jitter.
    public var jitter: Double = 0.1
    /// An attempt fails unless a 2xx answer arrives within this time.
    public var timeoutMilliseconds: Int64 = 15_000
    /// Deliveries in flight to one subscription at once (unless the subscription sets its own).
    public var maxConcurrentPerEndpoint: Int = 8
    /// Consecutive failed attempts that open an endpoint's circuit breaker.
    public var breakerFailureThreshold: Int = 5
    /// How long an open breaker pauses attempts before one trial attempt; doubles after each failed
    /// trial up to ``breakerMaxCooldownMilliseconds``.
    public var breakerCooldownMilliseconds: Int64 = 30_000
    public var breakerMaxCooldownMilliseconds: Int64 = 600_000
    /// Finished deliveries are kept this long for the delivery log.
    public var deliveryRetentionMilliseconds: Int64 = 7 * 86_400_000

    public init() {}

    /// When the attempt after `attemptsDone` failed attempts is due, or nil when the schedule is used up.
    public func nextAttempt(after attemptsDone: Int, failedAt now: Int64, random: () -> Double) -> Int64? {
        guard attemptsDone < retryScheduleMilliseconds.count else { return nil }
        let delay = Double(retryScheduleMilliseconds[attemptsDone])
        let factor = 1 + jitter * (2 * random() - 1)
        return now + Int64((delay * factor).rounded())
    }
}

/// A per-endpoint circuit breaker: after ``WebhookSettings/breakerFailureThreshold`` consecutive
/// failures the endpoint gets no attempts for a cooldown; then one trial attempt decides whether it
/// closes (success) or opens again for twice as long (failure). Pure value; the dispatcher owns it.
public struct CircuitBreaker: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case closed
        /// No attempts until the given wall ms.
        case open(until: Int64)
        /// One trial attempt is in flight.
        case halfOpen
    }

    public private(set) var state: State = .closed
    public private(set) var consecutiveFailures = 0
    private var cooldown: Int64 = 0

    public init() {}

    /// How many new attempts may start now (`capacity` when closed, at most one trial after the cooldown).
    public mutating func allowedAttempts(capacity: Int, inFlight: Int, now: Int64) -> Int {
        switch state {
        case .closed:
            return max(0, capacity - inFlight)
        case .open(let until):
            guard now >= until, inFlight == 0 else { return 0 }
            state = .halfOpen
            return 1
        case .halfOpen:
            return 0
        }
    }

    /// A half-open breaker found nothing to try: it waits (open, due now) until there is.
    public mutating func trialNotStarted(now: Int64) {
        if state == .halfOpen { state = .open(until: now) }
    }

    public mutating func recordSuccess() {
        state = .closed
        consecutiveFailures = 0
        cooldown = 0
    }

    public mutating func recordFailure(now: Int64, settings: WebhookSettings) {
        consecutiveFailures += 1
        switch state {
        case .halfOpen:
            cooldown = min(max(cooldown * 2, settings.breakerCooldownMilliseconds), settings.breakerMaxCooldownMilliseconds)
            state = .open(until: now + cooldown)
        case .closed where consecutiveFailures >= settings.breakerFailureThreshold:
            cooldown = settings.breakerCooldownMilliseconds
            state = .open(until: now + cooldown)
        case .closed, .open:
            break
        }
    }

    /// When an open breaker allows its trial (nil unless open).
    public var reopensAt: Int64? {
        if case .open(let until) = state { return until }
        return nil
    }

    /// `closed`, `open` or `half-open`, for the API.
    public var name: String {
        switch state {
        case .closed: "closed"
        case .open: "open"
        case .halfOpen: "half-open"
        }
    }
}
