// APNs Sandbox — what the event hub needs of a stream's body: the HTTP layer's writer, seen from below.

/// The body of one open event stream, written from any thread (``EventStreamHub`` writes SSE frames to
/// it). The server's `HTTPBodyWriter` conforms (Server/Events); a test may bring its own.
///
/// Writes never block: bytes wait in the writer until the connection sends them. More than
/// ``maxBufferedBytes`` waiting ends the stream (the client reconnects with `Last-Event-ID`).
public protocol EventStreamWriter: AnyObject, Sendable {
    /// Most bytes waiting to be sent before the stream is ended as too slow.
    var maxBufferedBytes: Int { get }
    /// Bytes written and not yet taken by the connection (a reader's backlog, roughly).
    var pendingByteCount: Int { get }
    /// Whether the stream is over (or finishing): writing is pointless.
    var isClosed: Bool { get }
    /// Queues `bytes` for sending.
    /// - Returns: false when the stream has finished or closed (the bytes are dropped), or when the
    ///   client is too slow: the stream is then finished after what was queued before.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool
    /// Ends the body once everything written has been sent. Later writes are refused.
    func finish()
    /// Runs `handler` once when the stream is over; at once if it already is.
    func onClose(_ handler: @escaping @Sendable () -> Void)
}
