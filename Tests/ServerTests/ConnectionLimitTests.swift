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
                    #expect(socket.readResponses(1, timeout: TestTime.seconds(15)).responses.first?.status == 200)
                }

                let third = try RawSocket(port: port)
                try? third.send(request)
                // Closed on accept, without an answer (an admitted connection would be answered at once, or kept
                // open until a timeout: 10 s for the request, 300 s idle). Real time (sockets), so a generous bound
                // for a machine busy with the rest of the suite: "at once" is what is well below those timeouts.
                let refused = third.readUntilClose(timeout: TestTime.seconds(8))
                #expect(refused.closed, "the third connection is closed by the server")
                #expect(refused.bytes.isEmpty, "and gets no answer: \(refused.text)")
                #expect(refused.elapsed < TestTime.seconds(5), "closed right after accept, took \(refused.elapsed) s")
                third.close()

                // The two first connections are unaffected.
                try second.send(request)
                #expect(second.readResponses(1, timeout: TestTime.seconds(15)).responses.first?.status == 200)

                // Free a slot; the server notices the close and admits a new connection. Until it has, a new one is
                // refused at once (closed), so this retries; how soon is real time, so the deadline is generous and
                // scaled (it ends at the first answer), and an admitted connection has seconds to be answered.
                first.close()
                let deadline = monotonicSeconds() + TestTime.seconds(30)
                var admitted = false
                var attempts = 0
                while !admitted && monotonicSeconds() < deadline {
                    attempts += 1
                    let next = try RawSocket(port: port)
                    try? next.send(request)
                    admitted = next.readResponses(1, timeout: TestTime.seconds(5)).responses.first?.status == 200
                    if !admitted { usleep(50_000) }
                }
                #expect(admitted, "a new connection is served once one of the two has closed (\(attempts) attempts)")
                second.close()
            }
        }
    }

    /// A TLS client that connects and never sends a ClientHello is closed after the request timeout.
    @Test func stalledTLSHandshakeIsClosed() async throws {
        try await withServer(configure: { $0.limits.requestTimeoutSeconds = 1 }) { server in
            // Real time (sockets): measured from before the connection, so a test thread that runs late cannot make
            // the close look early; the upper bound is the timeout plus a loaded machine's slack.
            let (result, elapsed) = try await offload {
                let started = monotonicSeconds()
                let socket = try RawSocket(port: server.tlsPort)
                let result = socket.readUntilClose(timeout: TestTime.timeoutBound(1) + 5)
                return (result, monotonicSeconds() - started)
            }
            #expect(result.closed)
            #expect(elapsed > 0.9 && elapsed < TestTime.timeoutBound(1), "closed after \(elapsed) s, timeout is 1 s")
            #expect(try await healthz(port: server.httpPort)?.status == 200)
        }
    }
}
