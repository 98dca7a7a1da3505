// APNs Sandbox — what one peer may make a connection hold or do, as a state machine.

/// The limits a peer is held to on one connection. Handlers report what happened (response bytes held
/// for the peer, a stream the peer reset, DATA for a stream no longer read, request activity) and get
/// back what to do; the guard does no I/O and reads no clock (times are monotonic nanoseconds).
///
/// - Output: while the response bytes held for the peer (unsent bodies plus the socket's backlog) are
///   above `maxOutputBytes`, no new request is started (``mayStartRequest(heldBytes:)``); a response
///   finished later by a handler that would take them above four times that is refused
///   (``admitsLateResponse(heldBytes:size:)``). A single response may be larger than the budget: it is
///   only started while the budget allows.
/// - HTTP/2 streams the peer resets, and DATA bytes for streams the server no longer reads, each drain
///   a token bucket; an empty bucket means the peer is abusive (``Verdict/goAway(_:)``,
///   ENHANCE_YOUR_CALM).
/// - Idle time counts request activity only (HEADERS, DATA, responses), never PING or SETTINGS.
///
/// A value type confined to its connection's loop.
struct ConnectionGuard: Sendable {
    struct Configuration: Sendable, Equatable {
        var maxOutputBytes = 4 << 20
        var streamResetBurst = 200
        var streamResetsPerSecond = 33.0
        var discardedDataBurstBytes = 32 << 20
        var discardedDataBytesPerSecond = Double(4 << 20)
        /// HPACK bytes of header blocks nghttp2 decodes for no stream (HEADERS on a closed stream): it must decode
        /// them to keep its dynamic table, with no callback that could stop it, and a block of 16 KiB can decode
        /// to megabytes (an HPACK bomb, ~7 ms of CPU each). A client sends such blocks only when a reset crossed
        /// its trailers: a few hundred bytes.
        var ignoredHeaderBurstBytes = 256 << 10
        var ignoredHeaderBytesPerSecond = Double(64 << 10)
        var idleTimeout: UInt64 = 300_000_000_000
    }

    /// Why a peer is sent away.
    enum Violation: String, Sendable, Equatable {
        case rapidReset = "too many streams reset"
        case discardedData = "too much DATA on closed streams"
        /// One header block decoded far past the header-list limit (``HTTP2ConnectionHandler/maxDecodedHeaderBlockBytes``).
        case headerBlockTooLarge = "a header block decoded far past the header-list limit"
        case ignoredHeaderBlocks = "too many header blocks on closed streams"
    }

    enum Verdict: Sendable, Equatable {
        case proceed
        case goAway(Violation)
    }

    let configuration: Configuration
    private var resets: TokenBucket
    private var discarded: TokenBucket
    private var ignoredHeaders: TokenBucket
    /// When the last request activity happened.
    private(set) var lastRequestActivity: UInt64
    /// Set by the first violation; later reports are ignored.
    private(set) var violation: Violation?

    init(configuration: Configuration, now: UInt64) {
        self.configuration = configuration
        self.resets = TokenBucket(
            capacity: Double(configuration.streamResetBurst), perSecond: configuration.streamResetsPerSecond, now: now)
        self.discarded = TokenBucket(
            capacity: Double(configuration.discardedDataBurstBytes),
            perSecond: configuration.discardedDataBytesPerSecond, now: now)
        self.ignoredHeaders = TokenBucket(
            capacity: Double(configuration.ignoredHeaderBurstBytes),
            perSecond: configuration.ignoredHeaderBytesPerSecond, now: now)
        self.lastRequestActivity = now
    }

    /// The bytes above which a response finished late is refused.
    var hardOutputBytes: Int {
        let (bytes, overflow) = configuration.maxOutputBytes.multipliedReportingOverflow(by: 4)
        return overflow ? .max : bytes
    }

    /// Whether a new request may be started while `heldBytes` of responses wait for the peer.
    func mayStartRequest(heldBytes: Int) -> Bool {
        heldBytes <= configuration.maxOutputBytes
    }

    /// Whether a response of `size` bytes that a handler finished after its request started may be
    /// held on top of `heldBytes` (else the stream is reset).
    func admitsLateResponse(heldBytes: Int, size: Int) -> Bool {
        size <= configuration.maxOutputBytes || heldBytes + size <= hardOutputBytes
    }

    /// The peer reset a stream (RST_STREAM).
    mutating func peerReset(now: UInt64) -> Verdict {
        guard violation == nil else { return .proceed }
        if resets.take(now: now) { return .proceed }
        violation = .rapidReset
        return .goAway(.rapidReset)
    }

    /// `bytes` of DATA arrived for a stream the server no longer reads (reset or closed).
    mutating func discardedData(_ bytes: Int, now: UInt64) -> Verdict {
        guard violation == nil, bytes > 0 else { return .proceed }
        if discarded.take(Double(bytes), now: now) { return .proceed }
        violation = .discardedData
        return .goAway(.discardedData)
    }

    /// `bytes` of HEADERS or CONTINUATION arrived for no stream (nghttp2 decodes them without callbacks).
    mutating func ignoredHeaderBlock(_ bytes: Int, now: UInt64) -> Verdict {
        guard violation == nil, bytes > 0 else { return .proceed }
        if ignoredHeaders.take(Double(bytes), now: now) { return .proceed }
        violation = .ignoredHeaderBlocks
        return .goAway(.ignoredHeaderBlocks)
    }

    /// A header block decoded past the hard bound: the peer is sent away at once (no honest client sends a header
    /// list several times the limit it was told; one that does is answered 431/413 below that bound).
    mutating func headerBlockTooLarge() -> Verdict {
        guard violation == nil else { return .proceed }
        violation = .headerBlockTooLarge
        return .goAway(.headerBlockTooLarge)
    }

    /// A request began, sent body bytes, ended or was answered.
    mutating func requestActivity(now: UInt64) {
        if now > lastRequestActivity { lastRequestActivity = now }
    }

    /// Whether a connection with `openRequests` requests in progress has been idle for too long.
    func isIdle(now: UInt64, openRequests: Int) -> Bool {
        openRequests == 0 && now > lastRequestActivity && now - lastRequestActivity > configuration.idleTimeout
    }
}
