// APNs Sandbox — the one request/response model both HTTP versions share.
import Glibc
import Transport

/// The protocol a request arrived on.
public enum HTTPVersion: String, Sendable {
    case http1_0 = "HTTP/1.0"
    case http1_1 = "HTTP/1.1"
    case http2 = "HTTP/2"
}

/// Facts about the connection a request came in on, for handlers that care (auth, logging).
public struct ConnectionInfo: Sendable {
    /// Unique per process, increasing.
    public var id: UInt64
    public var isTLS: Bool
    /// The ALPN protocol the TLS handshake selected, if any.
    public var alpn: String?
    public var remoteAddress: String
    /// The client as per-client limits count it (``ClientAddress``): its IPv4 address (IPv4-mapped IPv6
    /// written as IPv4) or its IPv6 /64 (`2001:db8:0:1::/64`).
    public var clientAddress: String
    /// The local port the connection was accepted on.
    public var localPort: Int
    /// The name of the listener that accepted the connection (`tls`, `cleartext`, …).
    public var listenerName: String
    /// The client certificate from the TLS handshake, if one was presented.
    public var peerCertificate: PeerCertificate?
    /// State shared by every request on this connection.
    public var session: ConnectionSession
    /// Index of the event loop (thread) that owns the connection: lets per-thread structures
    /// (shards, buffers) avoid locking against other loops.
    public var loopIndex: Int

    public init(
        id: UInt64, isTLS: Bool, alpn: String? = nil, remoteAddress: String = "", localPort: Int = 0,
        listenerName: String = "", peerCertificate: PeerCertificate? = nil, session: ConnectionSession? = nil,
        loopIndex: Int = 0, clientAddress: String? = nil
    ) {
        self.loopIndex = loopIndex
        self.id = id
        self.isTLS = isTLS
        self.alpn = alpn
        self.remoteAddress = remoteAddress
        self.clientAddress = clientAddress ?? remoteAddress
        self.localPort = localPort
        self.listenerName = listenerName
        self.peerCertificate = peerCertificate
        self.session = session ?? ConnectionSession(connectionID: id)
    }

    /// Builds the info for an accepted connection (after its TLS handshake).
    init(connection: any ConnectionContext) {
        self.init(
            id: connection.id, isTLS: connection.isTLS, alpn: connection.alpn,
            remoteAddress: connection.remoteAddress.description, localPort: connection.localPort,
            listenerName: connection.listenerName, peerCertificate: connection.peerCertificate,
            loopIndex: connection.loop.index, clientAddress: connection.remoteAddress.client.description)
    }
}

/// A complete request: head plus a fully received (bounded) body.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The request target as sent (`/path?query`).
    public var target: String
    /// `:authority` (HTTP/2) or `Host` (HTTP/1.1).
    public var authority: String?
    public var scheme: String
    public var version: HTTPVersion
    /// Regular header fields (no pseudo-headers, no `host`).
    public var headers: HTTPFields
    public var body: [UInt8]
    public var connection: ConnectionInfo
    /// HTTP/2 stream id, 0 on HTTP/1.1.
    public var streamID: Int32
    /// Cancelled when the client stops waiting for the response (stream reset, connection closed).
    public var cancellation: RequestCancellation

    public init(
        method: String, target: String, authority: String? = nil, scheme: String = "http",
        version: HTTPVersion = .http1_1, headers: HTTPFields = HTTPFields(), body: [UInt8] = [],
        connection: ConnectionInfo = ConnectionInfo(id: 0, isTLS: false), streamID: Int32 = 0,
        cancellation: RequestCancellation = RequestCancellation()
    ) {
        self.method = method
        self.target = target
        self.authority = authority
        self.scheme = scheme
        self.version = version
        self.headers = headers
        self.body = body
        self.connection = connection
        self.streamID = streamID
        self.cancellation = cancellation
    }

    /// The path part of the target, without the query.
    public var path: Substring {
        if let q = queryMarkIndex { return target[..<q] }
        return target[...]
    }

    /// Where `?` is in `target` (a memchr over contiguous UTF-8; this is on the hot path).
    private var queryMarkIndex: String.Index? {
        let offset = target.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            guard let base = bytes.baseAddress,
                  let hit = memchr(base, Int32(UInt8(ascii: "?")), bytes.count) else { return nil }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        } ?? target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target.utf8.distance(from: target.utf8.startIndex, to: $0) }
        return offset.map { target.utf8.index(target.utf8.startIndex, offsetBy: $0) }
    }

    /// The query part of the target (after `?`), if any.
    public var query: Substring? {
        guard let q = queryMarkIndex else { return nil }
        return target[target.index(after: q)...]
    }
}

/// A response: status, headers and a complete body.
///
/// A response with an empty body goes out on HTTP/2 as one HEADERS frame with END_STREAM
/// and no DATA frame (APNs clients such as aioapns rely on that).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPFields
    public var body: [UInt8]
    /// What the connection does with this response instead of (or besides) sending it normally: the sandbox's
    /// fault injection (``ConnectionFault``). nil, the default, costs one check where the response is sent.
    public var connectionFault: ConnectionFault? = nil

    public init(status: Int, headers: HTTPFields = HTTPFields(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
