// APNs Sandbox — how a request becomes a response.

/// The result of handling a request: a response now, or later from any thread.
public enum HandlerResult: Sendable {
    /// The response is ready (the fast path: no thread hop).
    case response(HTTPResponse)
    /// The handler will call `respond` exactly once, from any thread, when the response is ready.
    case deferred(@Sendable (_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void)
    /// A response whose body is produced over time (Server-Sent Events): the head (its `body` is
    /// ignored) goes out at once, then `start` gets the ``HTTPBodyWriter`` (on the connection's loop;
    /// it must not block). HTTP/1.1 sends the body chunked; HTTP/1.0 until the connection closes.
    case stream(HTTPResponse, @Sendable (HTTPBodyWriter) -> Void)
    /// Work that may block (store reads and writes): it runs on a worker thread, never on an event
    /// loop. Each connection runs at most `maxBlockingRequestsPerConnection` of these at once and starts
    /// one only while the response bytes waiting for its client are within
    /// `maxOutputBytesPerConnection`; one whose request is cancelled before it starts never runs.
    /// What it throws is answered by the ``Router``'s ``ErrorResponder``.
    case blocking(@Sendable () throws -> HTTPResponse)

    /// Runs `body` as a task and responds with its result.
    public static func async(_ body: @escaping @Sendable () async -> HTTPResponse) -> HandlerResult {
        .deferred { respond in
            Task { respond(await body()) }
        }
    }
}

/// Turns requests into responses. Implemented by `Router`.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) -> HandlerResult
}
