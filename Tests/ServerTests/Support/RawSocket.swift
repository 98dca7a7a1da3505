// APNs Sandbox — end-to-end test support: a small blocking TCP client, HTTP/1.1 and HTTP/2 frame parsing.
import Foundation
import Glibc

/// What a read collected.
struct ReadResult: Sendable {
    var bytes: [UInt8]
    /// The peer closed (EOF) or reset the connection.
    var closed: Bool
    /// The close was a reset (ECONNRESET), not an orderly FIN.
    var reset: Bool
    /// Seconds from the start of the read to its end (close, condition met, or timeout).
    var elapsed: Double

    var text: String { String(decoding: bytes, as: UTF8.self) }
    var responses: [HTTP1Response] { HTTP1Response.parseAll(bytes).responses }
}

/// A blocking IPv4 TCP client socket (close-on-exec, so child processes never inherit it).
///
/// Reads use `SO_RCVTIMEO` set to the time left before the deadline.
final class RawSocket: @unchecked Sendable {
    private(set) var fd: Int32

    /// Connects to `127.0.0.1:port`.
    init(port: Int, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ProcessError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let error = errno
            Glibc.close(fd)
            fd = -1
            throw ProcessError("connect to \(host):\(port): errno \(error)")
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Sends every byte (one `send` call for small buffers: pipelined requests go in one segment).
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ProcessError("send: errno \(errno)")
            }
            offset += n
        }
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Reads until `done(bytesSoFar)` is true, the peer closes, or `timeout` seconds pass.
    func read(timeout: Double, until done: ([UInt8]) -> Bool = { _ in false }) -> ReadResult {
        let start = monotonicSeconds()
        let deadline = start + timeout
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if done(bytes) { return ReadResult(bytes: bytes, closed: false, reset: false, elapsed: monotonicSeconds() - start) }
            let left = deadline - monotonicSeconds()
            if left <= 0 { break }
            var tv = timeval(tv_sec: Int(left), tv_usec: max(1000, Int((left - Double(Int(left))) * 1e6)))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 {
                bytes.append(contentsOf: buffer[0..<n])
            } else if n == 0 {
                return ReadResult(bytes: bytes, closed: true, reset: false, elapsed: monotonicSeconds() - start)
            } else if errno == ECONNRESET {
                return ReadResult(bytes: bytes, closed: true, reset: true, elapsed: monotonicSeconds() - start)
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                return ReadResult(bytes: bytes, closed: true, reset: true, elapsed: monotonicSeconds() - start)
            }
        }
        return ReadResult(bytes: bytes, closed: false, reset: false, elapsed: monotonicSeconds() - start)
    }

    /// Reads until the peer closes or `timeout` passes.
    func readUntilClose(timeout: Double) -> ReadResult {
        read(timeout: timeout)
    }

    /// Reads until `count` complete HTTP/1.1 responses (interim 1xx included) have arrived.
    func readResponses(_ count: Int, timeout: Double) -> ReadResult {
        read(timeout: timeout) { HTTP1Response.parseAll($0).responses.count >= count }
    }

    /// A free TCP port on 127.0.0.1 right now (bound to port 0, read back, released).
    static func freePort() throws -> Int {
        let (fd, port) = try bindLoopback(listening: false)
        Glibc.close(fd)
        return port
    }

    /// A socket bound to a free port of 127.0.0.1 (listening, if asked), and that port. The caller closes it.
    static func bindLoopback(listening: Bool) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ProcessError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0, !listening || listen(fd, 16) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard rc == 0 else {
            let error = errno
            Glibc.close(fd)
            throw ProcessError("bind/listen/getsockname: errno \(error)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}

// MARK: - Blocking conveniences, run off the cooperative pool

/// Opens a connection, sends `request` in one write, reads until the server closes (or `timeout`).
func exchangeUntilClose(port: Int, _ request: [UInt8], timeout: Double = 5) async throws -> ReadResult {
    try await offload {
        let socket = try RawSocket(port: port)
        try socket.send(request)
        return socket.readUntilClose(timeout: timeout)
    }
}

func exchangeUntilClose(port: Int, _ request: String, timeout: Double = 5) async throws -> ReadResult {
    try await exchangeUntilClose(port: port, Array(request.utf8), timeout: timeout)
}

/// `GET /healthz` on a fresh cleartext HTTP/1.1 connection; the response, or nil.
func healthz(port: Int, timeout: Double = 5) async throws -> HTTP1Response? {
    try await offload {
        let socket = try RawSocket(port: port)
        try socket.send("GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n")
        return socket.readResponses(1, timeout: timeout).responses.first
    }
}

// MARK: - HTTP/1.1 responses

/// One HTTP/1.1 response as the server wrote it.
struct HTTP1Response: Sendable {
    var statusLine: String
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }

    /// Every complete response at the start of `bytes` (bodies framed by Content-Length; 1xx,
    /// 204 and 304 have none), and the bytes after the last complete one.
    static func parseAll(_ bytes: [UInt8]) -> (responses: [HTTP1Response], rest: ArraySlice<UInt8>) {
        var responses: [HTTP1Response] = []
        var rest = bytes[...]
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while let end = rest.firstRange(of: separator) {
            let head = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self)
            let lines = head.components(separatedBy: "\r\n")
            let first = lines[0]
            let parts = first.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else { break }
            let headers: [(name: String, value: String)] = lines.dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            var length = 0
            if !(100..<200).contains(status) && status != 204 && status != 304 {
                length = headers.first { $0.name == "content-length" }.flatMap { Int($0.value) } ?? 0
            }
            let bodyStart = end.upperBound
            guard rest.endIndex - bodyStart >= length else { break }
            responses.append(HTTP1Response(
                statusLine: first, status: status, headers: headers, body: Array(rest[bodyStart..<(bodyStart + length)])))
            rest = rest[(bodyStart + length)...]
        }
        return (responses, rest)
    }
}

// MARK: - HTTP/2 frames

/// One HTTP/2 frame read off the wire (RFC 9113 §4.1).
struct HTTP2Frame: Sendable {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let rstStream: UInt8 = 0x3
    static let settings: UInt8 = 0x4
    static let goaway: UInt8 = 0x7

    var type: UInt8
    var flags: UInt8
    var streamID: UInt32
    var payload: [UInt8]

    /// GOAWAY: the error code.
    var goawayErrorCode: UInt32? {
        guard type == Self.goaway, payload.count >= 8 else { return nil }
        return payload[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Every complete frame in `bytes` (server-to-client bytes: no preface).
    static func parseAll(_ bytes: [UInt8]) -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        var index = 0
        while bytes.count - index >= 9 {
            let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            guard bytes.count - index - 9 >= length else { break }
            let stream = (UInt32(bytes[index + 5]) << 24 | UInt32(bytes[index + 6]) << 16
                | UInt32(bytes[index + 7]) << 8 | UInt32(bytes[index + 8])) & 0x7FFF_FFFF
            frames.append(HTTP2Frame(
                type: bytes[index + 3], flags: bytes[index + 4], streamID: stream,
                payload: Array(bytes[(index + 9)..<(index + 9 + length)])))
            index += 9 + length
        }
        return frames
    }

    /// One frame on the wire.
    static func encode(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
                UInt8(streamID >> 24 & 0x7F), UInt8(streamID >> 16 & 0xFF), UInt8(streamID >> 8 & 0xFF),
                UInt8(streamID & 0xFF)] + payload
    }

    /// An HPACK string literal without Huffman coding (RFC 7541 §5.2): its length as an integer with a 7-bit
    /// prefix (§5.1), then the bytes.
    static func hpackLiteral(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        guard bytes.count >= 127 else { return [UInt8(bytes.count)] + bytes }
        var encoded: [UInt8] = [127]
        var rest = bytes.count - 127
        while rest >= 128 {
            encoded.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        encoded.append(UInt8(rest))
        return encoded + bytes
    }

    /// An HPACK header block for a request: `:method` and `:scheme` from the static table, the
    /// rest as literals without indexing (no Huffman), so no dynamic table state is involved.
    static func requestHeaderBlock(method: String, path: String, authority: String = "e2e", extra: [(String, String)] = []) -> [UInt8] {
        var block: [UInt8] = [method == "GET" ? 0x82 : 0x83, 0x86]  // :method GET|POST, :scheme http
        block += [0x04] + hpackLiteral(path)  // :path (static name index 4)
        block += [0x01] + hpackLiteral(authority)  // :authority (static name index 1)
        for (name, value) in extra {
            block += [0x00] + hpackLiteral(name) + hpackLiteral(value)
        }
        return block
    }

    static let flagEndStream: UInt8 = 0x1
    static let flagEndHeaders: UInt8 = 0x4

    /// SETTINGS (not ACK): the value of parameter `id`, if present.
    func setting(_ id: UInt16) -> UInt32? {
        guard type == Self.settings, flags & 0x1 == 0 else { return nil }
        var index = 0
        var value: UInt32?
        while index + 6 <= payload.count {
            let identifier = UInt16(payload[index]) << 8 | UInt16(payload[index + 1])
            if identifier == id { value = payload[(index + 2)..<(index + 6)].reduce(0) { $0 << 8 | UInt32($1) } }
            index += 6
        }
        return value
    }

    static let settingsMaxConcurrentStreams: UInt16 = 0x3

    /// RST_STREAM: the error code.
    var rstErrorCode: UInt32? {
        guard type == Self.rstStream, payload.count == 4 else { return nil }
        return payload.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The client connection preface followed by an empty SETTINGS frame.
    static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 0x4, 0, 0, 0, 0, 0]
}
