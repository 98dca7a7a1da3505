// APNs Sandbox — HTTP2ConnectionHandler without a socket: nghttp2's client session in, the frames it gets back out.
import CNGHTTP2
import Support
import TestProcessSupport
import Testing
import Transport

@testable import HTTP

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTP2ConnectionHandlerTests {
    private static let shutdown = #"{"reason":"Shutdown"}"#

    /// A request is answered with one HEADERS frame with END_STREAM and no DATA; the connection stays open.
    @Test func answersWithHeadersOnly() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let (status, events, closing) = try harness.run { h in
            h.client.request(path: "/ok")
            h.client.exchange(with: h.conn)
            return (h.client.statuses[1], h.client.events, h.conn.isCloseRequested)
        }
        #expect(status == "200")
        #expect(events.contains(.headers(streamID: 1, endStream: true)))
        #expect(!events.contains { if case .data = $0 { true } else { false } }, "no DATA frame: \(events)")
        #expect(!closing)
    }

    /// Graceful shutdown: the notice (last stream 2^31-1) first, so a request already on its way is still
    /// answered; the final GOAWAY after the grace names the last stream; the stream in flight completes, then
    /// the connection closes.
    @Test func shutdownLetsStreamsInFlightCompleteThenSendsTheFinalGoAwayAndCloses() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        try harness.run { h in
            h.client.request(path: "/slow")  // stream 1, answered later
            h.client.exchange(with: h.conn)
        }
        let notice = try harness.run { h in
            h.client.request(path: "/ok")  // stream 3: sent before the client sees the notice
            let inFlight = h.client.output()
            h.conn.beginGracefulShutdown()
            h.conn.receive(inFlight)
            h.client.exchange(with: h.conn)
            return (h.client.goAways, h.client.statuses[3], h.conn.isCloseRequested)
        }
        #expect(notice.0 == [.init(lastStreamID: Int32.max, errorCode: 0, debugData: Self.shutdown)])
        #expect(notice.1 == "200", "a request sent before the notice arrived is answered")
        #expect(!notice.2)

        let gotFinal = try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.goAways.count == 2
        }
        #expect(gotFinal, "the final GOAWAY follows the notice")
        let final = try harness.run { h in (h.client.goAways.last, h.conn.isCloseRequested) }
        #expect(final.0 == .init(lastStreamID: 3, errorCode: 0, debugData: Self.shutdown))
        #expect(!final.1, "stream 1 is still in flight")

        backend.respondToOldest(body: "done")
        #expect(try harness.waitUntil { $0.conn.isCloseRequested }, "the last stream done, the connection closes")
        let (statuses, events) = try harness.run { h in
            h.client.receive(h.conn.takeWritten())
            return (h.client.statuses, h.client.events)
        }
        #expect(statuses == [1: "200", 3: "200"])
        let finalGoAway = events.lastIndex { if case .goAway = $0 { true } else { false } }
        let lastHeaders = events.lastIndex(of: .headers(streamID: 1, endStream: false))
        #expect(finalGoAway != nil && lastHeaders != nil && finalGoAway! < lastHeaders!, "\(events)")
        #expect(backend.cancellations.allSatisfy { !$0.isCancelled })
    }

    /// A connection without request activity for `idleTimeout` gets GOAWAY NO_ERROR IdleTimeout, then closes.
    @Test func idleConnectionGetsGoAwayIdleTimeoutAndCloses() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend) { $0.idleTimeout = 1_000_000_000 }
        defer { harness.stop() }
        let (goAways, closing) = try harness.run { h in
            // Half the idle timeout after a moment before the request: early whatever the machine's stalls.
            let beforeRequest = MonotonicClock.nanoseconds()
            h.client.request(path: "/ok")
            h.client.exchange(with: h.conn)
            h.conn.tick(now: beforeRequest + 500_000_000)
            h.client.exchange(with: h.conn)
            let early = h.client.goAways.count
            h.conn.tick(now: MonotonicClock.nanoseconds() + 2_000_000_000)
            h.client.receive(h.conn.takeWritten())
            return (early == 0 ? h.client.goAways : [], h.conn.isCloseRequested)
        }
        #expect(goAways == [.init(lastStreamID: 1, errorCode: 0, debugData: #"{"reason":"IdleTimeout"}"#)])
        #expect(closing)
    }

    /// A frame the protocol forbids (DATA on stream 0) is answered with GOAWAY PROTOCOL_ERROR, then the close.
    @Test func protocolErrorGetsGoAwayProtocolErrorAndCloses() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let (goAways, closing) = try harness.run { h in
            h.client.exchange(with: h.conn)
            h.conn.receive([0, 0, 1, 0x0, 0, 0, 0, 0, 0, 0x61])  // DATA, length 1, stream 0
            h.client.receive(h.conn.takeWritten())
            return (h.client.goAways, h.conn.isCloseRequested)
        }
        #expect(goAways.map(\.errorCode) == [NGHTTP2_PROTOCOL_ERROR.rawValue], "\(goAways)")
        #expect(closing)
    }

    /// Bytes that are not HTTP/2 on a connection that negotiated `h2` (nghttp2 rejects the client magic) close it
    /// without a request being handled.
    @Test func bytesThatAreNotHTTP2Close() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(alpn: "h2") { backend.handle($0) }
        defer { harness.stop() }
        let closing = try harness.run { h in
            h.conn.receive("GET /ok HTTP/1.1\r\nHost: sandbox.test\r\n\r\n")
            return h.conn.isCloseRequested
        }
        #expect(closing)
        #expect(backend.calls.isEmpty)
    }

    /// A reset past `streamResetBurst` gets GOAWAY ENHANCE_YOUR_CALM `TooManyStreamResets`; the work of the
    /// streams still open is cancelled and the connection closes.
    @Test func rapidResetPastTheBurstGetsEnhanceYourCalm() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend) {
            $0.streamResetBurst = 3
            // A refill too slow to matter within the test, however long the machine stalls it.
            $0.streamResetsPerSecond = 0.001
        }
        defer { harness.stop() }
        let (goAways, closing) = try harness.run { h in
            h.client.request(path: "/slow")  // stream 1 stays open
            h.client.exchange(with: h.conn)
            for _ in 0..<4 where !h.conn.isCloseRequested {
                let id = h.client.request(path: "/slow")
                h.client.exchange(with: h.conn)
                h.client.reset(id)
                h.client.exchange(with: h.conn)
            }
            return (h.client.goAways, h.conn.isCloseRequested)
        }
        #expect(goAways == [.init(lastStreamID: 9, errorCode: 0xb, debugData: #"{"reason":"TooManyStreamResets"}"#)])
        #expect(closing)
        #expect(backend.calls.count == 5)
        #expect(backend.cancellations.allSatisfy { $0.isCancelled }, "the open stream's work is cancelled too")
    }

    /// The peer resets a stream whose body is being streamed: the body's writer closes and its work is cancelled;
    /// no GOAWAY, and the connection serves the next request.
    @Test func resetMidResponseEndsTheStreamOnly() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend)
        defer { harness.stop() }
        let first = try harness.run { h in
            h.client.request(path: "/stream")
            h.client.exchange(with: h.conn)
            return (h.client.statuses[1], h.client.bodies[1].map { String(decoding: $0, as: UTF8.self) })
        }
        #expect(first.0 == "200")
        #expect(first.1 == "data: hello\n\n")
        let writer = try #require(backend.writers.first)
        #expect(!writer.isClosed)
        let after = try harness.run { h in
            h.client.reset(1)
            h.client.exchange(with: h.conn)
            h.client.request(path: "/ok")
            h.client.exchange(with: h.conn)
            return (h.client.statuses[3], h.client.goAways, h.conn.isCloseRequested)
        }
        #expect(writer.isClosed)
        #expect(backend.cancellations.first?.isCancelled == true)
        #expect(after.0 == "200")
        #expect(after.1.isEmpty)
        #expect(!after.2)
    }

    /// A peer that takes nothing (no WINDOW_UPDATE) while more than `maxOutputBytesPerConnection` of responses
    /// wait stops the work: no further request starts until it reads, then all are answered in full.
    @Test func outputOverTheBudgetHoldsBackNewRequests() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend) { $0.maxOutputBytesPerConnection = 16_384 }
        defer { harness.stop() }
        try harness.run { h in
            for _ in 0..<4 { h.client.request(path: "/big") }
            h.conn.receive(h.client.output())
            _ = h.conn.takeWritten()  // never read: the client sends no WINDOW_UPDATE
        }
        #expect(backend.calls.count == 1, "the first response fills the budget")

        let harness2 = try HandlerHarness(backend) { $0.maxOutputBytesPerConnection = 16_384 }
        defer { harness2.stop() }
        let bodies = try harness2.run { h in
            for _ in 0..<4 { h.client.request(path: "/big") }
            h.client.exchange(with: h.conn)
            return h.client.bodies.mapValues(\.count)
        }
        #expect(backend.calls.count == 5, "a reading peer gets every response")
        #expect(bodies == [1: TestBackend.bigBodyBytes, 3: TestBackend.bigBodyBytes, 5: TestBackend.bigBodyBytes, 7: TestBackend.bigBodyBytes])
    }
}
