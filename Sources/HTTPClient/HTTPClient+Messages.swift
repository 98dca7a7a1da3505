// APNs Sandbox — what an outbound request asks for and what comes back.

extension HTTPClient {
    /// One outbound request.
    public struct Request: Sendable {
        /// An `http://` or `https://` URL with a host.
        public var url: String
        /// `GET` unless set; `POST` switches to `GET` on a followed 301, 302 or 303 (as browsers and
        /// URLSession do), any other method is kept.
        public var method: String
        /// Sent in order, added to libcurl's own (`Host`, `Accept: */*`, `Content-Length`, and for a body
        /// `Content-Type: application/x-www-form-urlencoded`), replacing any of the same name;
        /// `Expect: 100-continue` is never sent.
        public var headers: [(String, String)]
        public var body: [UInt8]?
        /// The whole exchange, from resolving the name to the last body byte, redirects included.
        public var timeoutMilliseconds: Int64
        /// Resolving and connecting (TLS handshake included); nil: the total timeout, at most 10 s.
        public var connectTimeoutMilliseconds: Int64?
        public var redirects: RedirectPolicy
        /// Most body bytes accepted (after decoding; `Int.max`: no limit); a larger body aborts the transfer
        /// with ``Failure/tooLarge(limit:)``, at once when its `Content-Length` says so.
        public var maxResponseBytes: Int
        public var destination: Destination
        /// Sends `Accept-Encoding` with every encoding this libcurl decodes (Debian's: gzip, deflate, br,
        /// zstd) and decodes the body; off: the body is what the server sent.
        public var decodesContent: Bool
        /// Called on the transfer thread with each body chunk as it arrives (besides ``destination``), for
        /// streamed answers such as Server-Sent Events; it must return quickly and never block.
        public var onChunk: (@Sendable ([UInt8]) -> Void)?

        public init(
            url: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8]? = nil,
            timeoutMilliseconds: Int64, connectTimeoutMilliseconds: Int64? = nil, redirects: RedirectPolicy = .refuse,
            maxResponseBytes: Int = .max, destination: Destination = .memory, decodesContent: Bool = false
        ) {
            self.url = url
            self.method = method
            self.headers = headers
            self.body = body
            self.timeoutMilliseconds = timeoutMilliseconds
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.redirects = redirects
            self.maxResponseBytes = maxResponseBytes
            self.destination = destination
            self.decodesContent = decodesContent
        }
    }

    /// Whether a 3xx answer is followed.
    public enum RedirectPolicy: Sendable, Equatable {
        /// A 3xx is the answer (its status is reported, its body kept).
        case refuse
        /// Up to `limit` redirects to `http://` or `https://` URLs are followed; one more fails the request.
        case follow(limit: Int)
    }

    /// Where the response body goes.
    public enum Destination: Sendable, Equatable {
        /// Into ``Response/body``.
        case memory
        /// Into a new file at this path (created with mode 0600, or truncated), written as it arrives.
        case file(String)
        /// Nowhere; only ``Response/byteCount`` counts it.
        case discard
    }

    /// The final answer (after any redirects followed).
    public struct Response: Sendable, Equatable {
        public var status: Int
        /// The body when the destination was ``Destination/memory``, else empty.
        public var body: [UInt8]
        /// Body bytes received (after decoding).
        public var byteCount: Int
    }

    /// Why a request got no answer.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case invalidURL(String)
        /// ``Handle/cancel()`` was called first.
        case cancelled
        case tooLarge(limit: Int)
        /// The destination file could not be opened or written.
        case file(String)
        /// libcurl's explanation: no connection, a timeout, a TLS failure, too many redirects.
        case transport(String)
        /// ``HTTPClient/shutdown()`` came first.
        case shutDown

        public var description: String {
            switch self {
            case .invalidURL(let url): "invalid URL \(url)"
            case .cancelled: "cancelled"
            case .tooLarge(let limit): "response larger than \(limit) bytes"
            case .file(let problem): problem
            case .transport(let problem): problem
            case .shutDown: "the HTTP client is shut down"
            }
        }
    }

    /// Cancels its request; the completion then reports ``Failure/cancelled`` unless it already ran. A request
    /// still queued (its transfer not started) completes at once on the caller's thread: do not cancel while
    /// holding a lock its completion takes.
    public struct Handle: Sendable {
        let cancelRequest: @Sendable () -> Void

        public func cancel() { cancelRequest() }
    }
}
