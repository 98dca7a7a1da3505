// APNs Sandbox — what a protocol (HTTP/1.1, HTTP/2) plugs into a connection, and what it sees of it.

/// The protocol side of a connection. All calls happen on the connection's loop.
public protocol ConnectionHandler: AnyObject {
    /// Plaintext bytes arrived (already decrypted on TLS connections).
    func connectionDidReceive(_ connection: any ConnectionContext, bytes: UnsafeRawBufferPointer)
    /// Output fell below the low watermark after back-pressure: produce more if waiting.
    func connectionDidDrainOutput(_ connection: any ConnectionContext)
    /// Periodic tick (a few times a second) for idle and slow-request timeouts.
    func connectionTick(_ connection: any ConnectionContext, now: UInt64)
    /// The server is shutting down: finish in-flight work, accept nothing new, then close.
    func connectionBeginGracefulShutdown(_ connection: any ConnectionContext)
    /// The peer closed its side (EOF) or the connection is gone; release resources.
    func connectionDidClose(_ connection: any ConnectionContext)
    /// Response bytes held for the peer now (bodies not yet handed to the connection, plus its
    /// ``ConnectionContext/pendingOutputBytes``). Read once, at the close before ``connectionDidClose(_:)``:
    /// what is freed then decides whether the close is worth a trim (``MemoryTrimmer``). The HTTP handlers'
    /// own `heldOutputBytes` (what their `ConnectionGuard` budgets) is the witness.
    var heldOutputBytes: Int { get }
}

/// What a ``ConnectionHandler`` sees of its connection: facts about it, an output buffer, reading control
/// and closing. ``Connection`` is the one over a socket; tests drive handlers through one that records
/// what they write (bytes in, bytes out, no socket).
///
/// Threading: confined to ``loop``, like the handler.
public protocol ConnectionContext: AnyObject {
    /// Unique per process, increasing.
    var id: UInt64 { get }
    var loop: EventLoop { get }
    var remoteAddress: SocketAddress { get }
    var localPort: Int { get }
    var isTLS: Bool { get }
    /// The listener that accepted the connection (`tls`, `cleartext`, …).
    var listenerName: String { get }
    /// The ALPN protocol selected in the TLS handshake (`h2`, `http/1.1`), if any.
    var alpn: String? { get }
    /// The client certificate presented in the TLS handshake, if any.
    var peerCertificate: PeerCertificate? { get }
    /// When the connection was accepted (monotonic nanoseconds).
    var createdAt: UInt64 { get }
    /// Last time bytes arrived from the peer (monotonic nanoseconds).
    var lastReadAt: UInt64 { get }
    /// Bytes written and not yet taken by the socket.
    var pendingOutputBytes: Int { get }
    var isClosed: Bool { get }
    /// The protocol handler; replaced when the connection changes protocols (h2c upgrade).
    var handler: (any ConnectionHandler)? { get set }

    /// Queues bytes for the peer; they go out at the next ``flush()``. Dropped once closing.
    func write(_ bytes: UnsafeRawBufferPointer)
    /// Sends what is queued.
    func flush()
    /// Stops (or resumes) reading from the peer.
    func setReadingPaused(_ paused: Bool)
    /// Asks for one ``ConnectionHandler/connectionDidDrainOutput(_:)`` once all output has gone.
    /// - Returns: false when nothing is waiting (no callback will come).
    @discardableResult
    func notifyWhenDrained() -> Bool
    /// Sends what is queued, then closes.
    func closeAfterFlush()
    /// Closes now.
    func close()
}

extension ConnectionContext {
    /// Queues bytes for the peer; they go out at the next ``flush()``.
    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }
}

/// Makes the handler for each accepted connection.
public protocol ConnectionHandlerFactory: Sendable {
    func makeHandler(for connection: Connection) -> any ConnectionHandler
}
