// APNs Sandbox — picks HTTP/1.1 or HTTP/2 for each connection.
import Transport

/// Creates the protocol handler for each accepted connection.
public struct HTTPConnectionFactory: ConnectionHandlerFactory {
    let pipeline: HTTPPipeline

    public init(pipeline: HTTPPipeline) {
        self.pipeline = pipeline
    }

    public func makeHandler(for connection: Connection) -> any ConnectionHandler {
        makeHandler()
    }

    /// The first handler of a connection of any kind (``ConnectionContext``): the fuzz target's has no socket.
    public func makeHandler() -> any ConnectionHandler {
        ProtocolSniffer(pipeline: pipeline)
    }
}

/// The first handler of every connection: decides between HTTP/2 and HTTP/1.1 and hands over.
///
/// TLS with ALPN `h2` → HTTP/2; ALPN `http/1.1` → HTTP/1.1. Without ALPN (cleartext, or TLS
/// clients that offer none) the first bytes decide: the HTTP/2 client preface means HTTP/2
/// with prior knowledge, anything else HTTP/1.1.
final class ProtocolSniffer: ConnectionHandler {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    private let pipeline: HTTPPipeline
    private var buffered: [UInt8] = []

    init(pipeline: HTTPPipeline) {
        self.pipeline = pipeline
    }

    func connectionDidReceive(_ connection: any ConnectionContext, bytes: UnsafeRawBufferPointer) {
        buffered.append(contentsOf: bytes)
        let handler: any ConnectionHandler
        switch connection.alpn {
        case "h2":
            handler = HTTP2ConnectionHandler(connection: connection, pipeline: pipeline)
        case "http/1.1":
            handler = HTTP1ConnectionHandler(connection: connection, pipeline: pipeline)
        default:
            let n = min(buffered.count, Self.preface.count)
            if buffered[0..<n].elementsEqual(Self.preface[0..<n]) {
                if n < Self.preface.count { return }  // could still be the preface: wait
                handler = HTTP2ConnectionHandler(connection: connection, pipeline: pipeline)
            } else {
                handler = HTTP1ConnectionHandler(connection: connection, pipeline: pipeline)
            }
        }
        connection.handler = handler
        let bytes = buffered
        buffered = []
        bytes.withUnsafeBytes { handler.connectionDidReceive(connection, bytes: $0) }
    }

    func connectionDidDrainOutput(_ connection: any ConnectionContext) {}

    func connectionTick(_ connection: any ConnectionContext, now: UInt64) {
        if now &- connection.lastReadAt > pipeline.options.requestTimeout { connection.close() }
    }

    func connectionBeginGracefulShutdown(_ connection: any ConnectionContext) { connection.close() }

    func connectionDidClose(_ connection: any ConnectionContext) {}

    /// Nothing is answered before the protocol is known.
    var heldOutputBytes: Int { 0 }
}
