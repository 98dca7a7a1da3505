// APNs Sandbox — connection faults on HTTP/1.1, without a socket: request bytes in, response bytes out.
import Glibc
import Support
import TestProcessSupport
import Testing
import Transport

@testable import HTTP

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTP1ConnectionFaultTests {
    private static func get(_ path: String) -> String { "GET \(path) HTTP/1.1\r\nHost: sandbox.test\r\n\r\n" }

    /// GOAWAY and RST_STREAM have no HTTP/1.1 form: the answers before go out, then the connection closes without
    /// this one; a request pipelined after it is not handled.
    @Test(arguments: [ConnectionFault.goAway(errorCode: 0, debugData: Array("x".utf8)), .resetStream(errorCode: 8)])
    func goAwayAndResetCloseWithoutAnAnswer(fault: ConnectionFault) throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": fault])
        defer { harness.stop() }
        let (responses, closing, closed) = try harness.run { h in
            h.conn.receive(Self.get("/ok") + Self.get("/fault") + Self.get("/ok"))
            return (http1Responses(h.conn.takeWritten()), h.conn.isCloseRequested, h.conn.isClosed)
        }
        #expect(responses.map(\.status) == [200], "only the answer before the fault")
        #expect(closing && !closed, "closed after flushing")
        #expect(backend.calls == ["/ok", "/fault"])
    }

    /// Close: the connection closes at once, without an answer.
    @Test func closeEndsTheConnectionAtOnce() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .close])
        defer { harness.stop() }
        let (responses, closed) = try harness.run { h in
            h.conn.receive(Self.get("/fault") + Self.get("/ok"))
            return (http1Responses(h.conn.takeWritten()), h.conn.isClosed)
        }
        #expect(responses.isEmpty)
        #expect(closed)
        #expect(backend.calls == ["/fault"])
    }

    /// A close fault on a deferred answer, while another request waits behind it: both are dropped, the waiting
    /// one's work cancelled.
    @Test func closeOnALateAnswerCancelsTheRest() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness { request in
            if request.path == "/late" {
                return .deferred { respond in
                    var response = HTTPResponse(status: 200)
                    response.connectionFault = .close
                    respond(response)
                }
            }
            return backend.handle(request)
        }
        defer { harness.stop() }
        try harness.run { h in h.conn.receive(Self.get("/slow") + Self.get("/late")) }
        #expect(try harness.waitUntil { $0.conn.isClosed })
        #expect(backend.cancellations.first?.isCancelled == true)
    }

    /// Stall: reading pauses, the request is not answered, and a request pipelined after it is not started;
    /// after the stall both are answered in order and reading resumes.
    @Test func stallHoldsTheConnectionThenAnswers() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .stall(nanoseconds: ms(150))], body: "late")
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        let during = try harness.run { h in
            h.conn.receive(Self.get("/fault") + Self.get("/ok"))
            return (h.conn.takeWritten(), h.conn.isReadingPaused)
        }
        #expect(during.0.isEmpty)
        #expect(during.1, "reading paused")
        #expect(backend.calls == ["/fault"])
        var written: [UInt8] = []
        #expect(try harness.waitUntil { h in
            written += h.conn.takeWritten()
            return http1Responses(written).count == 2
        })
        #expect(elapsed(since: start) >= ms(150))
        let responses = http1Responses(written)
        #expect(responses.map(\.status) == [200, 200])
        #expect(responses.map(\.body) == ["late", ""])
        #expect(backend.calls == ["/fault", "/ok"])
        #expect(try harness.run { h in h.conn.isReadingPaused } == false)
    }

    /// A close during a stall cancels its timer; a stall without an end holds until then.
    @Test func closeDuringAStallCancelsItsTimer() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/timed": .stall(nanoseconds: ms(50)), "/forever": .stall(nanoseconds: nil)])
        defer { harness.stop() }
        let handler = try harness.run { h in
            h.conn.receive(Self.get("/forever"))
            return h.conn.handler as? HTTP1ConnectionHandler
        }
        let held = try harness.run { h in
            h.conn.tick()
            return (handler?.faults.stalls, handler?.faults.timers.count, h.conn.takeWritten())
        }
        #expect(held.0 == 1 && held.1 == 0 && held.2.isEmpty)

        let harness2 = try HandlerHarness(backend, faults: ["/timed": .stall(nanoseconds: ms(50))])
        defer { harness2.stop() }
        let timed = try harness2.run { h in
            h.conn.receive(Self.get("/timed"))
            let handler = h.conn.handler as? HTTP1ConnectionHandler
            let armed = handler?.faults.timers.count
            h.conn.close()
            return (armed, handler?.faults.timers.count)
        }
        #expect(timed.0 == 1 && timed.1 == 0)
        usleep(100_000)  // past the stall's end: nothing runs
        #expect(try harness2.run { h in h.conn.takeWritten() }.isEmpty)
    }

    /// Trickle: the head (with the body's content-length) at once, then `bytesPerChunk` bytes per interval; the
    /// next pipelined answer follows the last chunk.
    @Test func trickleSendsTheBodyInPacedChunks() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(
            backend, faults: ["/fault": .trickle(bytesPerChunk: 4, intervalNanoseconds: ms(60))], body: "0123456789")
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        let head = try harness.run { h in
            h.conn.receive(Self.get("/fault") + Self.get("/ok"))
            return String(decoding: h.conn.takeWritten(), as: UTF8.self)
        }
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.contains("content-length: 10\r\n") && head.hasSuffix("\r\n\r\n"))
        var body: [UInt8] = []
        #expect(try harness.waitUntil { h in
            body += h.conn.takeWritten()
            return http1Responses(Array(head.utf8) + body).count == 2
        })
        let responses = http1Responses(Array(head.utf8) + body)
        #expect(responses.map(\.body) == ["0123456789", ""])
        // What went out, write by write: the head, three chunks, then the next answer.
        let deliveries = try harness.run { h in h.conn.deliveries }
        #expect(deliveries.count == 5, "\(deliveries)")
        #expect(deliveries.dropFirst().prefix(3).map(\.count) == [4, 4, 2])
        let chunkTimes = deliveries.dropFirst().prefix(3).map { $0.at &- start }
        #expect(chunkTimes.count == 3 && chunkTimes[0] >= ms(60) && chunkTimes[2] >= ms(180), "one chunk per interval")
        #expect(zip(chunkTimes, chunkTimes.dropFirst()).allSatisfy { $1 >= $0 &+ ms(55) }, "\(chunkTimes)")
    }

    /// A cut of MAX_CONCURRENT_STREAMS means nothing on HTTP/1.1: the answer goes out normally.
    @Test func limitConcurrentStreamsAnswersNormally() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .limitConcurrentStreams(to: 1, forNanoseconds: ms(10))], body: "ok")
        defer { harness.stop() }
        let (responses, closing) = try harness.run { h in
            h.conn.receive(Self.get("/fault") + Self.get("/ok"))
            return (http1Responses(h.conn.takeWritten()), h.conn.isCloseRequested)
        }
        #expect(responses.map(\.status) == [200, 200])
        #expect(responses.first?.body == "ok")
        #expect(!closing)
    }
}
