// APNs Sandbox — origins and host names as the admin access rules compare them.
import Glibc

/// A web origin, `scheme://host[:port]`, normalized for comparison: scheme and host in lower case, the
/// scheme's default port (80, 443) left out, IPv6 hosts in brackets.
struct AdminOrigin: Hashable, Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int?

    /// Parses an `Origin` header value or a configured origin; nil for anything else (`null`, paths).
    init?(_ text: String) {
        let lower = text.lowercased()
        guard let separator = lower.range(of: "://") else { return nil }
        let scheme = String(lower[..<separator.lowerBound])
        guard scheme == "http" || scheme == "https" else { return nil }
        let authority = String(lower[separator.upperBound...])
        guard !authority.isEmpty, !authority.contains("/"), !authority.contains("@"), !authority.contains("?"),
            let (host, port) = HostName.split(authority)
        else { return nil }
        self.init(scheme: scheme, host: host, port: port)
    }

    /// The origin a request was sent to: its scheme and its `Host` (`:authority`).
    init?(scheme: String, authority: String) {
        guard let (host, port) = HostName.split(authority.lowercased()) else { return nil }
        self.init(scheme: scheme.lowercased(), host: host, port: port)
    }

    private init(scheme: String, host: String, port: Int?) {
        self.scheme = scheme
        self.host = host
        let defaultPort = scheme == "https" ? 443 : 80
        self.port = port == defaultPort ? nil : port
    }

    var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port.map { "\(scheme)://\(shownHost):\($0)" } ?? "\(scheme)://\(shownHost)"
    }
}

extension SandboxConfiguration {
    /// The listeners bound to an address other than loopback: other machines can reach them.
    var listenersReachableFromOtherMachines: [Listener] {
        listeners.filter { !HostName.isLoopbackOnly($0.host) }
    }
}

/// Host names and addresses of `Host` headers and listener configurations.
enum HostName {
    /// Splits `host[:port]` (IPv6 in brackets) into the host (lower case, no brackets) and the port.
    static func split(_ authority: String) -> (host: String, port: Int?)? {
        var host = Substring(authority)
        var port: Int?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()), (0...65_535).contains(number) else { return nil }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":") {
            // One colon: host:port; more: a bare IPv6 address (not valid in Host, but harmless to accept).
            if host.firstIndex(of: ":") == colon {
                guard let number = Int(host[host.index(after: colon)...]), (0...65_535).contains(number) else { return nil }
                port = number
                host = host[..<colon]
            }
        }
        guard !host.isEmpty else { return nil }
        return (host.lowercased(), port)
    }

    /// Whether `host` is an IPv4 or IPv6 address literal (no brackets).
    static func isAddressLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Whether a listener bound to `host` is reachable from this machine only: `127.0.0.0/8`, `::1`,
    /// `::ffff:127.x.x.x` or `localhost`. Everything else (`::`, `0.0.0.0`, a LAN address, a name) is not.
    static func isLoopbackOnly(_ host: String) -> Bool {
        var lower = host.lowercased()
        if lower.hasPrefix("[") && lower.hasSuffix("]") { lower = String(lower.dropFirst().dropLast()) }
        if lower == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, lower, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, lower, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }  // ::1
        let isMapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        return isMapped && bytes[12] == 127
    }
}
