// APNs Sandbox — IPv4/IPv6 socket addresses.
import Glibc
import Support

/// An IPv4 or IPv6 address and port, as bound or accepted.
public struct SocketAddress: Sendable, CustomStringConvertible {
    enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    let storage: Storage

    /// Parses a numeric host (`127.0.0.1`, `::1`, `::`, `0.0.0.0`; `localhost` means 127.0.0.1).
    public init(host: String, port: Int) throws {
        let host = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
            storage = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
            storage = .v6(v6)
            return
        }
        throw SystemError(call: "inet_pton(\(host))", errno: EINVAL)
    }

    init(storage: sockaddr_storage) {
        var storage = storage
        if Int32(storage.ss_family) == AF_INET6 {
            self.storage = .v6(withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) })
        } else {
            self.storage = .v4(withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) })
        }
    }

    public var family: Int32 {
        switch storage {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    public var port: Int {
        switch storage {
        case .v4(let a): Int(UInt16(bigEndian: a.sin_port))
        case .v6(let a): Int(UInt16(bigEndian: a.sin6_port))
        }
    }

    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch storage {
        case .v4(var a):
            inet_ntop(AF_INET, &a.sin_addr, &buffer, socklen_t(buffer.count))
        case .v6(var a):
            inet_ntop(AF_INET6, &a.sin6_addr, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String {
        family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The client as per-client limits count it: an IPv4 address (an IPv4-mapped IPv6 address,
    /// `::ffff:192.0.2.1`, what a dual-stack listener sees for IPv4 clients, is its IPv4 address), or an
    /// IPv6 /64 — one host usually has a whole /64 and could otherwise take a new address per connection.
    /// Loopback (`::1`) is itself.
    public var client: ClientAddress {
        switch storage {
        case .v4(let a):
            return ClientAddress(high: 0, low: 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: a.sin_addr.s_addr)))
        case .v6(var a):
            let bytes = withUnsafeBytes(of: &a.sin6_addr) { Array($0) }
            let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let address = ClientAddress(high: high, low: low)
            guard !address.isIPv4, high != 0 else { return address }
            return ClientAddress(high: high, low: 0)
        }
    }

    /// `host`, with an IPv4-mapped IPv6 address written as IPv4 (`192.0.2.1`, not `::ffff:192.0.2.1`).
    public var clientHost: String {
        let client = self.client
        return client.isIPv4 ? client.description : host
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        switch storage {
        case .v4(var a):
            return try withUnsafePointer(to: &a) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(var a):
            return try withUnsafePointer(to: &a) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }
}

/// A peer's IP address (no port) as 128 bits, IPv4 as IPv4-mapped IPv6: the identity per-client limits count by.
public struct ClientAddress: Hashable, Sendable {
    public var high: UInt64
    public var low: UInt64

    /// Whether this is an IPv4 address (or IPv4-mapped IPv6).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }
}

extension ClientAddress: CustomStringConvertible {
    /// `192.0.2.1`, `2001:db8:0:1::/64`, or a whole IPv6 address for `::…` (loopback and the like).
    public var description: String {
        if isIPv4 {
            let v4 = UInt32(truncatingIfNeeded: low)
            return "\(v4 >> 24).\(v4 >> 16 & 0xFF).\(v4 >> 8 & 0xFF).\(v4 & 0xFF)"
        }
        let groups = (0..<4).map { String((high >> (48 - 16 * UInt64($0))) & 0xFFFF, radix: 16) }
            + (0..<4).map { String((low >> (48 - 16 * UInt64($0))) & 0xFFFF, radix: 16) }
        return high != 0 && low == 0 ? groups[0..<4].joined(separator: ":") + "::/64" : groups.joined(separator: ":")
    }
}
