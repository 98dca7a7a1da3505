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
    /// SETTINGS_MAX_HEADER_LIST_SIZE: larger header blocks get 431.
    public var maxHeaderListSize: Int = 8000
    /// Largest request body on either protocol.
    public var maxBodyBytes: Int = 1 << 20
    /// A connection with no request in flight and no bytes for this long is closed.
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
    /// Log one line per request (off by default).
    public var requestLogging = false
    /// HTTP/1.1 requests a connection may have queued (pipelined) before reading pauses.
    public var maxPipelinedRequests = 16

    public init() {}
}
