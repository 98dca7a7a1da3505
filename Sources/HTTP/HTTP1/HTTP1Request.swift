// APNs Sandbox — what the HTTP/1.1 request parser produces: limits, request heads, events and errors.

/// Size and count limits for one HTTP/1.1 request.
public struct HTTP1Limits: Sendable {
    /// The longest request line (without CRLF); longer is 414.
    public var maxRequestLineBytes: Int
    /// The most header fields (and, separately, trailer fields); more is 431.
    public var maxHeaderCount: Int
    /// The largest head: request line, field lines and the empty line, CRLFs included; larger is 431.
    public var maxHeaderBytes: Int
    /// The largest body, framed by Content-Length or chunked; larger is 413.
    public var maxBodyBytes: Int

    public init(
        maxRequestLineBytes: Int = 8192, maxHeaderCount: Int = 100, maxHeaderBytes: Int = 16384,
        maxBodyBytes: Int = 1 << 20
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }
}

/// A parsed and validated request head.
public struct HTTP1RequestHead: Sendable, Equatable {
    public var method: String
    /// The request target exactly as sent (origin, absolute, authority or asterisk form).
    public var target: String
    /// `.http1_0` or `.http1_1`.
    public var version: HTTPVersion
    /// Every field line in order, names lowercased (including `host`, framing and `connection`).
    public var headers: HTTPFields
    /// Whether the connection stays open after the response (`Connection` rules per version).
    public var keepAlive: Bool
    /// `Expect: 100-continue` on HTTP/1.1.
    public var expectsContinue: Bool

    public init(
        method: String, target: String, version: HTTPVersion, headers: HTTPFields = HTTPFields(),
        keepAlive: Bool = true, expectsContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }
}

/// Why a request was rejected, as the status the connection answers with before closing.
public struct HTTP1ParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 400, 413, 414, 417, 431, 501 or 505.
    public var status: Int
    /// A short, client-safe explanation.
    public var message: String
    /// For 413: the head of the request whose body is too large; for 431: the request line and the
    /// fields read before the limit (when the request line was complete). The application can then
    /// answer in its own terms (APNs: `{"reason":…}` with an `apns-id`).
    public var head: HTTP1RequestHead?

    public init(status: Int, message: String, head: HTTP1RequestHead? = nil) {
        self.status = status
        self.message = message
        self.head = head
    }

    public var description: String { "HTTP/1.1 parse error \(status): \(message)" }

    static func badRequest(_ message: String) -> Self { Self(status: 400, message: message) }
    static let contentTooLarge = Self(status: 413, message: "request body too large")
    static let uriTooLong = Self(status: 414, message: "request line too long")
    static let expectationFailed = Self(status: 417, message: "unsupported expectation")
    static let headerFieldsTooLarge = Self(status: 431, message: "request header fields too large")
    static let unsupportedTransferCoding = Self(status: 501, message: "unsupported transfer coding")
    static let versionNotSupported = Self(status: 505, message: "HTTP version not supported")
}

/// What `HTTP1Parser.next()` found.
public enum HTTP1ParseEvent: Sendable, Equatable {
    /// Nothing more can be parsed until more bytes are appended.
    case needMoreData
    /// The head is complete, has `Expect: 100-continue`, and its body has not fully arrived yet.
    /// Emitted at most once per request, before its `.request`.
    case expectContinue(HTTP1RequestHead)
    /// One complete request.
    case request(HTTP1RequestHead, body: [UInt8])
    /// The byte stream is invalid; answer with `status` and close. The parser stays failed.
    case error(HTTP1ParseError)
}
