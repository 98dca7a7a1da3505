// APNs Sandbox — end to end: the connection limit and stalled TLS handshakes.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct ConnectionLimitTests {
    /// With `maxConnections = 2` a third connection is closed at once; closing one lets a new one in.
    @Test func connectionsBeyondTheLimitAreClosed() async throws {
        try await withServer(configure: { $0.limits.maxConnections = 2 }) { server in
            try await offload {
                let port = server.httpPort
                let request = "GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n"
                // Two connections the server has certainly accepted: each got an answer.
                let first = try RawSocket(port: port)
                let second = try RawSocket(port: port)
                for socket in [first, second] {
                    try socket.send(request)
                    #expect(socket.readResponses(1, timeout: 5).responses.first?.status == 200)
                }

                let third = try RawSocket(port: port)
                try? third.send(request)
                let refused = third.readUntilClose(timeout: 3)
                #expect(refused.closed, "the third connection is closed by the server")
                #expect(refused.bytes.isEmpty, "and gets no answer: \(refused.text)")
                #expect(refused.elapsed < 2, "closed right after accept, took \(refused.elapsed) s")
                third.close()

                // The two first connections are unaffected.
                try second.send(request)
                #expect(second.readResponses(1, timeout: 5).responses.first?.status == 200)

                // Free a slot; the server notices the close and admits a new connection.
                first.close()
                let deadline = monotonicSeconds() + 3
                var admitted = false
                while !admitted && monotonicSeconds() < deadline {
                    let next = try RawSocket(port: port)
                    try? next.send(request)
                    admitted = next.readResponses(1, timeout: 1).responses.first?.status == 200
                    if !admitted { usleep(50_000) }
                }
                #expect(admitted, "a new connection is served once one of the two has closed")
                second.close()
            }
        }
    }

    /// A TLS client that connects and never sends a ClientHello is closed after the request timeout.
    @Test func stalledTLSHandshakeIsClosed() async throws {
        try await withServer(configure: { $0.limits.requestTimeoutSeconds = 1 }) { server in
            let result = try await offload {
                let socket = try RawSocket(port: server.tlsPort)
                return socket.readUntilClose(timeout: 6)
            }
            #expect(result.closed)
            #expect(result.elapsed > 0.8 && result.elapsed < 4, "closed after \(result.elapsed) s, timeout is 1 s")
            #expect(try await healthz(port: server.httpPort)?.status == 200)
        }
    }
}
