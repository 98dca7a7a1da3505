// APNs Sandbox — the raw socket calls, grouped.
import CLinuxSystem
import Glibc

/// Thin wrappers over the socket system calls used by listeners and connections.
enum Posix {
    static func makeListeningSocket(address: SocketAddress, backlog: Int32, reusePort: Bool) throws -> Int32 {
        let fd = try syscallChecked("socket") {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if reusePort { try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
            if address.family == AF_INET6 {
                // Dual stack: `::` also accepts IPv4 (as ::ffff:a.b.c.d).
                try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0)
            }
            _ = try address.withSockaddr { ptr, len in
                try syscallChecked("bind") { bind(fd, ptr, len) }
            }
            try syscallChecked("listen") { listen(fd, backlog) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// Bytes sent on `fd` the peer has not acknowledged (the FIN counts one); nil when the kernel cannot say.
    static func unacknowledgedOutputBytes(_ fd: Int32) -> Int? {
        let bytes = CLinuxSystem_unacknowledged_output(fd)
        return bytes >= 0 ? Int(bytes) : nil
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws {
        var value = value
        try syscallChecked("setsockopt") {
            setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    static func localAddress(of fd: Int32) throws -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { ptr in
            try ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try syscallChecked("getsockname") { getsockname(fd, sa, &length) }
            }
        }
        return SocketAddress(storage: storage)
    }

    /// Accepts one connection; nil when none is pending.
    static func accept(_ fd: Int32) throws -> (Int32, SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &storage) { ptr in
            try ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try syscall("accept4") { CLinuxSystem_accept4(fd, sa, &length) }
            }
        }
        switch result {
        case .processed(let client): return (client, SocketAddress(storage: storage))
        case .wouldBlock: return nil
        }
    }
}
