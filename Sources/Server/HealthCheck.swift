// APNs Sandbox — the `healthcheck` command: one blocking HTTP/1.1 GET.
import Glibc

/// A tiny blocking HTTP/1.1 client for `apns-sandbox healthcheck` (used by Docker's
/// HEALTHCHECK, where no curl is installed).
public enum HealthCheck {
    /// Fetches `http://host:port/path` and returns the status code, or nil on any failure.
    public static func status(url: String, timeoutSeconds: Int = 3) -> Int? {
        guard let (host, port, path) = parse(url) else { return nil }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else { return nil }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return nil
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while response.count < 64 * 1024 {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
            if response.contains(UInt8(ascii: "\n")) { break }
        }
        let line = String(decoding: response.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else { return nil }
        return status
    }

    /// `http://<host>:<port>/healthz` of the first cleartext listener of `configuration`; a listener on every
    /// address (`::` is dual-stack, `0.0.0.0`) is asked on 127.0.0.1. Nil when every listener is TLS.
    public static func defaultURL(for configuration: SandboxConfiguration) -> String? {
        guard let listener = configuration.listeners.first(where: { !$0.tls }) else { return nil }
        let host: String = switch listener.host {
        case "::", "0.0.0.0", "", "[::]": "127.0.0.1"
        case let address where address.contains(":") && !address.hasPrefix("["): "[\(address)]"
        case let address: address
        }
        return "http://\(host):\(listener.port)/healthz"
    }

    static func parse(_ url: String) -> (String, Int, String)? {
        guard url.hasPrefix("http://") else { return nil }
        let rest = url.dropFirst("http://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var host = String(authority)
        var port = 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { port = Int(after.dropFirst()) ?? -1 }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? -1
        }
        guard (1...65_535).contains(port), !host.isEmpty else { return nil }
        return (host, port, path)
    }
}
