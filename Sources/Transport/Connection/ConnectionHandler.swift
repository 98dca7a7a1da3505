// APNs Sandbox — what a protocol (HTTP/1.1, HTTP/2) plugs into a connection.

/// The protocol side of a connection. All calls happen on the connection's loop.
public protocol ConnectionHandler: AnyObject {
    /// Plaintext bytes arrived (already decrypted on TLS connections).
    func connectionDidReceive(_ connection: Connection, bytes: UnsafeRawBufferPointer)
    /// Output fell below the low watermark after back-pressure: produce more if waiting.
    func connectionDidDrainOutput(_ connection: Connection)
    /// Periodic tick (a few times a second) for idle and slow-request timeouts.
    func connectionTick(_ connection: Connection, now: UInt64)
    /// The server is shutting down: finish in-flight work, accept nothing new, then close.
    func connectionBeginGracefulShutdown(_ connection: Connection)
    /// The peer closed its side (EOF) or the connection is gone; release resources.
    func connectionDidClose(_ connection: Connection)
}

/// Makes the handler for each accepted connection.
public protocol ConnectionHandlerFactory: Sendable {
    func makeHandler(for connection: Connection) -> any ConnectionHandler
}
