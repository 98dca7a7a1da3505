// APNs Sandbox — a tiny HTTP/1.1 server on loopback for media downloads and webhooks in tests.
import Foundation
import Glibc
import Synchronization
import Support

/// A blocking HTTP/1.1 server on 127.0.0.1 and an ephemeral port: one thread accepts, one thread per
/// connection answers (`Connection: close`). Good enough for tests; not for anything else.
final class LocalHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Response: Sendable {
        var status: Int = 200
        var contentType = "application/octet-stream"
        var body: [UInt8] = []
        /// Wait this long before answering.
        var delayMilliseconds = 0

        static func json(_ text: String, status: Int = 200, delay: Int = 0) -> Response {
            Response(status: status, contentType: "application/json", body: Array(text.utf8), delayMilliseconds: delay)
        }
    }

    let port: UInt16
    private let listener: Int32
    private let handler: @Sendable (Request) -> Response
    private let requests = Locked<[Request]>([])
    private let stopped = Atomic<Bool>(false)

    init(handler: @escaping @Sendable (Request) -> Response) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 512) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        self.handler = handler
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit {
        stop()
    }

    /// The URL of `path` on this server.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Requests received so far.
    var received: [Request] { requests.withLock { $0 } }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var headEnd: Int?
        while headEnd == nil {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            data += buffer[0..<n]
            headEnd = data.indices.dropLast(3).first { data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10 }
        }
        guard let headEnd else { return }
        let head = String(decoding: data[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = head[0].split(separator: " ")
        guard requestLine.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(data[(headEnd + 4)...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            body += buffer[0..<n]
        }
        let request = Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body)
        requests.withLock { $0.append(request) }
        let response = handler(request)
        if response.delayMilliseconds > 0 { usleep(UInt32(response.delayMilliseconds) * 1000) }
        var out = Array("HTTP/1.1 \(response.status) X\r\nContent-Type: \(response.contentType)\r\nContent-Length: \(response.body.count)\r\nConnection: close\r\n\r\n".utf8)
        out += response.body
        var offset = 0
        while offset < out.count {
            let n = out.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }
}
