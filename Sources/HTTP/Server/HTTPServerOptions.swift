// APNs Sandbox — limits and behaviour shared by the HTTP/1.1 and HTTP/2 handlers.

/// Per-server HTTP settings. Times are in nanoseconds.
public struct HTTPServerOptions: Sendable {
    public var http1Limits = HTTP1Limits()
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised to HTTP/2 clients.
    public var maxConcurrentStreams: UInt32 = 1000
    /// The SETTINGS_MAX_CONCURRENT_STREAMS a new HTTP/2 connection starts with, if it should
    /// differ from `maxConcurrentStreams` (APNs allows one stream until a valid provider token
    /// arrives); handlers raise it later through `ConnectionSession.setMaxConcurrentStreams`.
    public var initialMaxConcurrentStreams: (@Sendable (ConnectionInfo) -> UInt32)?
    /// Why a connection may start below `maxConcurrentStreams` (and how to lift it), for the debug line
    /// logged when a stream is refused under that lower limit.
    public var initialStreamLimitExplanation: String?
    /// SETTINGS_MAX_HEADER_LIST_SIZE: larger header blocks get 431.
    public var maxHeaderListSize: Int = 8000
    /// Largest request body on either protocol.
    public var maxBodyBytes: Int = 1 << 20
    /// A connection with no request in flight and no request activity for this long is closed (HTTP/2
    /// PING and SETTINGS do not count as activity).
    public var idleTimeout: UInt64 = 300_000_000_000
    /// A request whose head/body is not complete after this long gets 408 (HTTP/1.1) or
    /// RST_STREAM (HTTP/2): the slowloris guard.
    public var requestTimeout: UInt64 = 10_000_000_000
    /// Responses at least this large are gzip-compressed when the client accepts gzip.
    public var gzipMinimumBytes: Int = 1024
    /// Answers a request whose body is larger than `maxBodyBytes` (the request arrives with an
    /// empty body); nil, or a nil answer, gives the generic JSON 413. The connection's protocol
    /// decides what happens to the unread body (HTTP/1.1 closes, HTTP/2 resets the stream).
    public var oversizedBodyResponder: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    /// Answers a request whose header section is over the limits (`maxHeaderListSize` on HTTP/2,
    /// `http1Limits` on HTTP/1.1). The request carries its method and target and the header fields
    /// read before the limit, no body; nil, or a nil answer, gives the generic JSON 431.
    public var oversizedHeadersResponder: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    /// Response bytes one connection may hold for a peer that does not read them (unsent bodies,
    /// HTTP/2 bodies waiting for flow-control window, the socket's backlog). Above it no new request is
    /// started until they drain; a late (deferred) response that would take them above four times this
    /// is not sent (HTTP/2: its stream is reset with ENHANCE_YOUR_CALM).
    public var maxOutputBytesPerConnection = 4 << 20
    /// HTTP/2: request-body bytes one connection may have buffered and not yet handed to a handler;
    /// the connection's flow-control window. At least `maxBodyBytes`.
    public var maxRequestBodyBytesPerConnection = 4 << 20
    /// HTTP/2: a stream whose response has not moved for this long (the peer gives it no window) is
    /// reset (nanoseconds). Connections whose socket takes nothing for this long are closed by the
    /// transport (`ConnectionLimits.writeStallTimeout`).
    public var sendTimeout: UInt64 = 30_000_000_000
    /// HTTP/2: RST_STREAM frames a peer may send in a burst, and per second after it; beyond, the
    /// connection gets GOAWAY ENHANCE_YOUR_CALM (the rapid-reset attack).
    public var streamResetBurst = 200
    public var streamResetsPerSecond = 33.0
    /// HTTP/2: DATA bytes a peer may send in a burst, and per second after it, for streams the server
    /// has closed or reset (nghttp2 drops them silently); beyond, GOAWAY ENHANCE_YOUR_CALM.
    public var discardedDataBurstBytes = 32 << 20
    public var discardedDataBytesPerSecond = Double(4 << 20)
    /// Bytes a streaming body (Server-Sent Events) may have waiting for a slow client before the stream
    /// is ended (the client reconnects and resumes).
    public var streamBufferBytes = 256 << 10
    /// ``HandlerResult/blocking(_:)`` requests one connection may have running at once.
    public var maxBlockingRequestsPerConnection = 4
    /// Worker threads for blocking handlers; 0 = one per core (at least 2).
    public var blockingThreads = 0
    /// Log one line per request (off by default).
    public var requestLogging = false
    /// HTTP/1.1 requests a connection may have queued (pipelined) before reading pauses.
    public var maxPipelinedRequests = 16

    public init() {}

    /// The per-connection limits of these options as a ``ConnectionGuard`` configuration.
    var guardConfiguration: ConnectionGuard.Configuration {
        ConnectionGuard.Configuration(
            maxOutputBytes: maxOutputBytesPerConnection, streamResetBurst: streamResetBurst,
            streamResetsPerSecond: streamResetsPerSecond, discardedDataBurstBytes: discardedDataBurstBytes,
            discardedDataBytesPerSecond: discardedDataBytesPerSecond, idleTimeout: idleTimeout)
    }
}
