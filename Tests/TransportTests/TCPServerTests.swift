// APNs Sandbox — real sockets through TCPServer: echo, back-pressure, connection limit.
import Foundation
import Glibc
import Support
import Synchronization
import Testing
import Transport

/// Echoes every byte back and remembers the largest output backlog it saw.
final class EchoHandler: ConnectionHandler {
    let stats: EchoStats

    init(stats: EchoStats) { self.stats = stats }

    func connectionDidReceive(_ connection: any ConnectionContext, bytes: UnsafeRawBufferPointer) {
        connection.write(bytes)
        stats.received.add(bytes.count, ordering: .relaxed)
        let pending = connection.pendingOutputBytes
        if pending > stats.maxPending.load(ordering: .relaxed) { stats.maxPending.store(pending, ordering: .relaxed) }
    }
    func connectionDidDrainOutput(_ connection: any ConnectionContext) {}
    func connectionTick(_ connection: any ConnectionContext, now: UInt64) {}
    func connectionBeginGracefulShutdown(_ connection: any ConnectionContext) { connection.closeAfterFlush() }
    func connectionDidClose(_ connection: any ConnectionContext) {}
    var heldOutputBytes: Int { 0 }
}

final class EchoStats: Sendable {
    let received = Atomic<Int>(0)
    let maxPending = Atomic<Int>(0)
}

struct EchoFactory: ConnectionHandlerFactory {
    let stats: EchoStats
    func makeHandler(for connection: Connection) -> any ConnectionHandler { EchoHandler(stats: stats) }
}

/// A blocking client socket with a receive timeout.
struct ClientSocket {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw SystemError(call: "connect", errno: errno) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    /// Reads until `count` bytes arrived, EOF or the timeout.
    func receive(count: Int) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while result.count < count {
            let n = recv(fd, &buffer, min(buffer.count, count - result.count), 0)
            if n <= 0 { break }
            result.append(contentsOf: buffer[0..<n])
        }
        return result
    }

    func close() { Glibc.close(fd) }
}

@Suite struct TCPServerTests {
    func withEchoServer(maxConnections: Int = 100, _ body: (TCPServer, EchoStats, Int) throws -> Void) throws {
        let group = try EventLoopGroup(count: 2)
        let stats = EchoStats()
        var configuration = TCPServer.Configuration(listeners: [ListenerConfiguration(name: "echo", host: "127.0.0.1", port: 0)])
        configuration.maxConnections = maxConnections
        let server = TCPServer(
            configuration: configuration, loops: group.loops, factory: EchoFactory(stats: stats),
            logger: Logger(label: "test", level: .error))
        let port = try #require(try server.start().first?.port)
        defer {
            server.shutdown(gracePeriodNanoseconds: 1_000_000_000)
            group.shutdown()
        }
        try body(server, stats, port)
    }

    /// Bytes written by several clients come back unchanged on their own connections.
    @Test func echoesOnEveryConnection() throws {
        try withEchoServer { _, _, port in
            let clients = try (0..<4).map { _ in try ClientSocket(port: port) }
            defer { clients.forEach { $0.close() } }
            for (i, client) in clients.enumerated() {
                let message = Array("hello \(i)".utf8)
                #expect(client.send(message) == message.count)
                #expect(client.receive(count: message.count) == message)
            }
        }
    }

    /// A peer that sends but never reads cannot make the server buffer without bound: reading
    /// stops near the high watermark (1 MiB), so the server's backlog stays bounded.
    @Test func stopsReadingWhenPeerDoesNotRead() throws {
        try withEchoServer { _, stats, port in
            let client = try ClientSocket(port: port)
            defer { client.close() }
            var flags = fcntl(client.fd, F_GETFL)
            flags |= O_NONBLOCK
            _ = fcntl(client.fd, F_SETFL, flags)
            let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
            var sent = 0
            let deadline = Date().addingTimeInterval(3)
            while Date() < deadline && sent < 64 << 20 {
                let n = client.send(chunk)
                if n > 0 { sent += n } else { usleep(2_000) }
            }
            // The kernel buffers a few MiB both ways; everything past that must have been refused.
            #expect(sent < 32 << 20, "the server kept reading \(sent) bytes from a peer that never reads")
            #expect(stats.maxPending.load(ordering: .relaxed) < (1 << 20) + 128 * 1024)
        }
    }

    /// Connections beyond `maxConnections` are closed at once; a freed slot admits a new one.
    @Test func refusesConnectionsOverTheLimit() throws {
        try withEchoServer(maxConnections: 2) { server, _, port in
            let first = try ClientSocket(port: port)
            let second = try ClientSocket(port: port)
            #expect(first.send([1]) == 1 && first.receive(count: 1) == [1])
            #expect(second.send([2]) == 1 && second.receive(count: 1) == [2])
            let third = try ClientSocket(port: port)
            _ = third.send([3])
            #expect(third.receive(count: 1).isEmpty, "the third connection should have been closed")
            third.close()
            first.close()
            let deadline = Date().addingTimeInterval(2)
            while server.openConnections > 1 && Date() < deadline { usleep(5_000) }
            let fourth = try ClientSocket(port: port)
            #expect(fourth.send([4]) == 1 && fourth.receive(count: 1) == [4])
            fourth.close()
            second.close()
        }
    }
}
