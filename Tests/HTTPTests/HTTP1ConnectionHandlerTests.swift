// APNs Sandbox — HTTP1ConnectionHandler without a socket: request bytes in, response bytes out.
import TestProcessSupport
import Testing
import Transport

@testable import HTTP

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTP1ConnectionHandlerTests {
    private static func get(_ path: String, _ extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: sandbox.test\r\n\(extra)\r\n"
    }

    /// Pipelined requests all start, and their responses go out in request order even when the first is
    /// answered last; the connection stays open (keep-alive).
    @Test func pipelinedResponsesKeepRequestOrder() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let early = try harness.run { h in
            h.conn.receive(Self.get("/slow") + Self.get("/ok"))
            return h.conn.takeWritten()
        }
        #expect(early.isEmpty, "the second response waits behind the first")
        #expect(backend.calls == ["/slow", "/ok"])
        backend.respondToOldest(body: "slow")
        #expect(try harness.waitUntil { !$0.conn.written.isEmpty })
        let (responses, closing) = try harness.run { h in (http1Responses(h.conn.takeWritten()), h.conn.isCloseRequested) }
        #expect(responses.map(\.status) == [200, 200])
        #expect(responses.map(\.body) == ["slow", ""])
        #expect(responses.allSatisfy { $0.headers["connection"] != "close" })
        #expect(!closing)
    }

    /// `Connection: close` is answered with `connection: close` and closes; a request pipelined after it is
    /// neither read nor handled.
    @Test func connectionCloseEndsTheConnectionAfterItsResponse() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let (responses, closing) = try harness.run { h in
            h.conn.receive(Self.get("/ok", "Connection: close\r\n") + Self.get("/ok"))
            return (http1Responses(h.conn.takeWritten()), h.conn.isCloseRequested)
        }
        #expect(responses.map(\.status) == [200])
        #expect(responses.first?.headers["connection"] == "close")
        #expect(closing)
        #expect(backend.calls == ["/ok"])
    }

    /// Shutdown while a request is being handled: nothing closes until its response is written, then the
    /// connection closes. An idle connection closes at once.
    @Test func shutdownWhileARequestIsInFlightAnswersItThenCloses() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let closingAtShutdown = try harness.run { h in
            h.conn.receive(Self.get("/slow"))
            h.conn.beginGracefulShutdown()
            return h.conn.isCloseRequested
        }
        #expect(!closingAtShutdown)
        backend.respondToOldest(body: "finished")
        #expect(try harness.waitUntil { $0.conn.isCloseRequested })
        let responses = try harness.run { h in http1Responses(h.conn.takeWritten()) }
        #expect(responses.map(\.status) == [200])
        #expect(responses.map(\.body) == ["finished"])

        let idle = try HandlerHarness(backend)
        defer { idle.stop() }
        let closed = try idle.run { h in
            h.conn.receive(Self.get("/ok"))
            h.conn.beginGracefulShutdown()
            return h.conn.isCloseRequested
        }
        #expect(closed, "nothing in progress: closes at once")
    }

    /// A request partly read when the shutdown comes is still read and answered, with `connection: close`.
    @Test func shutdownMidRequestAnswersItWithConnectionClose() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let request = Self.get("/ok")
        let (closingEarly, responses, closing) = try harness.run { h in
            h.conn.receive(String(request.prefix(20)))
            h.conn.beginGracefulShutdown()
            let early = h.conn.isCloseRequested
            h.conn.receive(String(request.dropFirst(20)))
            return (early, http1Responses(h.conn.takeWritten()), h.conn.isCloseRequested)
        }
        #expect(!closingEarly)
        #expect(responses.map(\.status) == [200])
        #expect(responses.first?.headers["connection"] == "close")
        #expect(closing)
    }

    /// A client that pipelines and reads nothing: once more than `maxOutputBytesPerConnection` wait for it, no
    /// request starts and reading pauses; each time it reads, the next request is handled.
    @Test func pipelinedRequestsStopAtTheOutputBudget() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend) { $0.maxOutputBytesPerConnection = 16_384 }
        defer { harness.stop() }
        let paused = try harness.run { h in
            h.conn.isPeerReading = false
            h.conn.receive(String(repeating: Self.get("/big"), count: 4))
            return h.conn.isReadingPaused
        }
        #expect(backend.calls.count == 1)
        #expect(paused)
        for expected in 2...4 {
            try harness.run { $0.conn.peerReads() }
            #expect(backend.calls.count == expected)
        }
        let (responses, pausedAfter) = try harness.run { h in
            h.conn.peerReads()
            return (http1Responses(h.conn.takeWritten()), h.conn.isReadingPaused)
        }
        #expect(responses.map(\.body.count) == Array(repeating: TestBackend.bigBodyBytes, count: 4))
        #expect(!pausedAfter)
    }

    /// An h2c upgrade offer is answered `101 Switching Protocols`, the connection's handler becomes the HTTP/2
    /// one, and the request is answered over HTTP/2 as stream 1.
    @Test func h2cUpgradeHandsTheConnectionToHTTP2() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let settings: [UInt8] = [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 0xFF, 0xFF]  // "AAMAAABkAAQAAP__"
        let (head, isHTTP2, status) = try harness.run { h in
            h.conn.receive(Self.get("/ok", "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n"))
            let bytes = h.conn.takeWritten()
            let switching = H2CUpgrade.switchingProtocols
            let head = String(decoding: bytes.prefix(switching.count), as: UTF8.self)
            _ = h.client.upgrade(settings: settings)
            h.client.receive(Array(bytes.dropFirst(switching.count)))
            h.client.exchange(with: h.conn)
            return (head, h.conn.handler is HTTP2ConnectionHandler, h.client.statuses[1])
        }
        #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols"))
        #expect(isHTTP2)
        #expect(status == "200")
        #expect(backend.calls == ["/ok"])
    }

    /// A request that cannot be parsed is answered 400 with a JSON error, then the connection closes.
    @Test func malformedRequestIsAnswered400ThenCloses() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let (responses, closing) = try harness.run { h in
            h.conn.receive("GET /ok HTTP/1.1\r\n\r\n")  // no Host
            return (http1Responses(h.conn.takeWritten()), h.conn.isCloseRequested)
        }
        #expect(responses.map(\.status) == [400])
        #expect(responses.first?.body.contains("bad_request") == true)
        #expect(closing)
        #expect(backend.calls.isEmpty)
    }
}
