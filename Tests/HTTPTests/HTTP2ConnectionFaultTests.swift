// APNs Sandbox — connection faults on HTTP/2, without a socket: nghttp2's client session sees the frames.
import CNGHTTP2
import Glibc
import Support
import TestProcessSupport
import Testing
import Transport

@testable import HTTP

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTP2ConnectionFaultTests {
    private static let debugData = #"{"reason":"FaultInjected"}"#

    /// GOAWAY: the faulted stream gets no answer; what was queued before (stream 3's answer) goes out first, then
    /// GOAWAY with the fault's code and debug data naming stream 3 (the faulted stream 5 − 2); the connection
    /// closes, and the work still in flight (stream 1) is cancelled.
    @Test func goAwayFollowsWhatWasQueuedAndCloses() throws {
        let backend = TestBackend()
        let fault = ConnectionFault.goAway(errorCode: 2, debugData: Array(Self.debugData.utf8))
        let harness = try HandlerHarness(backend, faults: ["/fault": fault])
        defer { harness.stop() }
        let (events, statuses, closing) = try harness.run { h in
            h.client.exchange(with: h.conn)
            h.client.request(path: "/slow")  // 1: in flight
            h.client.request(path: "/ok")  // 3: answered in the same read
            h.client.request(path: "/fault")  // 5
            h.client.exchange(with: h.conn)
            return (h.client.events, h.client.statuses, h.conn.isCloseRequested)
        }
        #expect(statuses == [3: "200"])
        let goAway = events.firstIndex(of: .goAway(.init(lastStreamID: 3, errorCode: 2, debugData: Self.debugData)))
        let answer = events.firstIndex(of: .headers(streamID: 3, endStream: true))
        #expect(goAway != nil && answer != nil && answer! < goAway!, "\(events)")
        #expect(events.filter { if case .goAway = $0 { true } else { false } }.count == 1, "one GOAWAY: \(events)")
        #expect(closing)
        #expect(backend.cancellations.first?.isCancelled == true, "stream 1's work is dropped")
    }

    /// GOAWAY on stream 1 names stream 0 as the last one; nothing later is read.
    @Test func goAwayOnTheFirstStreamNamesStreamZero() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .goAway(errorCode: 0, debugData: [])])
        defer { harness.stop() }
        let (goAways, closing) = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            h.client.request(path: "/ok")
            h.client.exchange(with: h.conn)
            return (h.client.goAways, h.conn.isCloseRequested)
        }
        #expect(goAways == [.init(lastStreamID: 0, errorCode: 0, debugData: "")])
        #expect(closing)
        #expect(backend.calls == ["/fault"])
    }

    /// RST_STREAM with the fault's code instead of the answer; the connection serves the next request.
    @Test func resetStreamAnswersWithRstStreamAndTheConnectionGoesOn() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .resetStream(errorCode: NGHTTP2_REFUSED_STREAM.rawValue)])
        defer { harness.stop() }
        let (events, statuses, closedStreams, closing) = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            h.client.request(path: "/ok")
            h.client.exchange(with: h.conn)
            return (h.client.events, h.client.statuses, h.client.closedStreams, h.conn.isCloseRequested)
        }
        #expect(events.contains(.rstStream(streamID: 1, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)))
        #expect(!events.contains(.headers(streamID: 1, endStream: true)) && statuses[1] == nil)
        #expect(closedStreams[1] == NGHTTP2_REFUSED_STREAM.rawValue)
        #expect(statuses[3] == "200")
        #expect(!closing && !events.contains { if case .goAway = $0 { true } else { false } })
    }

    /// Close: the connection closes at once, no frame answers the stream, the work in flight is cancelled.
    @Test func closeEndsTheConnectionAtOnce() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .close])
        defer { harness.stop() }
        let (events, closed) = try harness.run { h in
            h.client.exchange(with: h.conn)
            let before = h.client.events.count
            h.client.request(path: "/slow")
            h.client.request(path: "/fault")
            h.conn.receive(h.client.output())
            h.client.receive(h.conn.takeWritten())
            return (Array(h.client.events.dropFirst(before)), h.conn.isClosed)
        }
        #expect(closed)
        #expect(!events.contains { if case .headers = $0 { true } else if case .goAway = $0 { true } else { false } }, "\(events)")
        #expect(backend.cancellations.first?.isCancelled == true)
    }

    /// Stall: reading pauses and the stream is not answered; bytes that still arrive (a PING, another request) are
    /// not processed — no PING ACK, no handler call. After the stall the answer goes out, reading resumes, and
    /// the held bytes are processed.
    @Test func stallHoldsTheConnectionThenAnswers() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .stall(nanoseconds: ms(200))])
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        let during = try harness.run { h in
            h.client.exchange(with: h.conn)
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            let paused = h.conn.isReadingPaused
            let before = h.client.events.count
            h.client.ping()
            h.client.request(path: "/ok")
            h.client.exchange(with: h.conn)
            return (paused, Array(h.client.events.dropFirst(before)), h.client.statuses)
        }
        #expect(during.0, "reading paused")
        #expect(during.1.isEmpty, "nothing answered during the stall: \(during.1)")
        #expect(during.2.isEmpty)
        #expect(backend.calls == ["/fault"])
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.statuses.count == 2
        })
        let after = try harness.run { h in (h.client.statuses, h.client.events, h.conn.isReadingPaused, h.client.headersReceivedAt[1]) }
        #expect(after.0 == [1: "200", 3: "200"])
        #expect(after.1.contains(.other(type: UInt8(NGHTTP2_PING.rawValue))), "the PING is answered after the stall")
        #expect(!after.2, "reading resumed")
        #expect((after.3 ?? 0) &- start >= ms(200), "answered after the stall")
        #expect(backend.calls == ["/fault", "/ok"])
    }

    /// A connection that closes during a stall (the client gave up) ends it: its timer is cancelled, the held
    /// response dropped, and nothing runs later.
    @Test func closeDuringAStallCancelsItsTimer() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .stall(nanoseconds: ms(50))])
        defer { harness.stop() }
        let handler = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.request(path: "/ok")  // waits behind the stall
            h.client.exchange(with: h.conn)
            return h.conn.handler as? HTTP2ConnectionHandler
        }
        let state = try harness.run { _ in (handler?.faults.stalled.count, handler?.faults.timers.count) }
        #expect(state.0 == 1 && state.1 == 1)
        try harness.run { h in h.conn.close() }
        usleep(100_000)  // past the stall's end
        let after = try harness.run { h in (handler?.faults.timers.isEmpty, handler?.faults.isStalled, h.client.statuses) }
        #expect(after.0 == true && after.1 == false)
        #expect(after.2.isEmpty)
        #expect(backend.calls == ["/fault"], "the request behind the stall never started")
    }

    /// A stall without an end holds the connection until it closes; the close ends it cleanly.
    @Test func stallWithoutAnEndHoldsUntilTheClose() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .stall(nanoseconds: nil)])
        defer { harness.stop() }
        let handler = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            return h.conn.handler as? HTTP2ConnectionHandler
        }
        usleep(50_000)
        let held = try harness.run { h in
            h.conn.tick()
            h.client.exchange(with: h.conn)
            return (handler?.faults.isStalled, handler?.faults.timers.count, h.client.statuses, h.conn.isReadingPaused)
        }
        #expect(held.0 == true && held.1 == 0 && held.2.isEmpty && held.3)
        let closed = try harness.run { h in
            h.conn.close()
            return handler?.faults.isStalled
        }
        #expect(closed == false)
    }

    /// Trickle: HEADERS at once, then DATA frames of at most `bytesPerChunk`, one per interval, the last with
    /// END_STREAM.
    @Test func trickleSendsTheBodyInPacedChunks() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(
            backend, faults: ["/fault": .trickle(bytesPerChunk: 4, intervalNanoseconds: ms(60))], body: "0123456789")
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        let first = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            return (h.client.statuses[1], h.client.dataFrames)
        }
        #expect(first.0 == "200", "the head at once")
        #expect(first.1.isEmpty || elapsed(since: start) >= ms(60), "no DATA before one interval")
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.closedStreams[1] != nil
        })
        let (frames, body, closed) = try harness.run { h in (h.client.dataFrames, h.client.bodies[1], h.client.closedStreams[1]) }
        #expect(frames.map(\.length) == [4, 4, 2])
        #expect(frames.map(\.endStream) == [false, false, true])
        #expect(body.map { String(decoding: $0, as: UTF8.self) } == "0123456789")
        #expect(closed == 0)
        #expect(frames[0].receivedAt &- start >= ms(60), "the first chunk after one interval")
        #expect(frames[2].receivedAt &- start >= ms(180), "three chunks, three intervals")
    }

    /// Trickle of an empty body: HEADERS without END_STREAM at once, then END_STREAM (an empty DATA frame)
    /// after one interval.
    @Test func trickleOfAnEmptyBodyEndsAfterOneInterval() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .trickle(bytesPerChunk: 100, intervalNanoseconds: ms(80))])
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        let events = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            return h.client.events
        }
        #expect(events.contains(.headers(streamID: 1, endStream: false)))
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.closedStreams[1] != nil
        })
        let frames = try harness.run { h in h.client.dataFrames }
        #expect(frames.count == 1 && frames[0].length == 0 && frames[0].endStream)
        #expect(frames[0].receivedAt &- start >= ms(80))
    }

    /// A trickle slower than `sendTimeout` is not reset for it: the pace, not the peer, holds the response.
    @Test func aTrickleSlowerThanTheSendTimeoutCompletes() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(
            backend, faults: ["/fault": .trickle(bytesPerChunk: 2, intervalNanoseconds: ms(80))], body: "0123") {
            $0.sendTimeout = ms(20)
        }
        defer { harness.stop() }
        try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
        }
        #expect(try harness.waitUntil { h in
            h.conn.tick()
            h.client.exchange(with: h.conn)
            return h.client.closedStreams[1] != nil
        })
        let (closed, body) = try harness.run { h in (h.client.closedStreams[1], h.client.bodies[1]) }
        #expect(closed == 0, "completed, not reset")
        #expect(body.map { String(decoding: $0, as: UTF8.self) } == "0123")
    }

    /// A connection closed mid-trickle: the pace's timer is cancelled, nothing more is written.
    @Test func closeDuringATrickleCancelsItsTimer() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(
            backend, faults: ["/fault": .trickle(bytesPerChunk: 2, intervalNanoseconds: ms(30))], body: "0123456789")
        defer { harness.stop() }
        let handler = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            return h.conn.handler as? HTTP2ConnectionHandler
        }
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return !h.client.dataFrames.isEmpty
        })
        let timers = try harness.run { h in
            let armed = handler?.faults.timers.count
            h.conn.close()
            return (armed, handler?.faults.timers.count)
        }
        #expect(timers.0 == 1 && timers.1 == 0)
        usleep(100_000)
        let frames = try harness.run { h in h.client.dataFrames.count }
        #expect(frames < 5, "the body did not finish")
    }

    /// Cut of MAX_CONCURRENT_STREAMS: the answer first, then SETTINGS with the cut; after the duration SETTINGS
    /// restores the limit in force (the configured 1000); a stream over the cut is refused meanwhile.
    @Test func limitConcurrentStreamsCutsThenRestores() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: ["/fault": .limitConcurrentStreams(to: 1, forNanoseconds: ms(150))])
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        let cut = try harness.run { h in
            h.client.request(path: "/fault")
            h.client.exchange(with: h.conn)
            return (h.client.statuses[1], h.client.events, h.client.maxConcurrentStreamsSettings)
        }
        #expect(cut.0 == "200")
        #expect(cut.2 == [1000, 1])
        let answer = cut.1.firstIndex(of: .headers(streamID: 1, endStream: true))
        let settings = cut.1.lastIndex(of: .settings(ack: false))
        #expect(answer != nil && settings != nil && answer! < settings!, "the answer goes out before the cut: \(cut.1)")
        try harness.run { h in
            h.client.request(path: "/slow")  // 3: the one stream allowed
            h.client.request(path: "/ok")  // 5: over the cut, so nghttp2's client holds it back
            h.client.exchange(with: h.conn)
        }
        #expect(backend.calls == ["/fault", "/slow"], "the peer keeps to the cut")
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.maxConcurrentStreamsSettings.count == 3
        })
        let restored = try harness.run { h in h.client.maxConcurrentStreamsSettings }
        #expect(restored == [1000, 1, 1000])
        #expect(elapsed(since: start) >= ms(150))
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.statuses[5] == "200"
        }, "the held stream goes once the limit is restored")
    }

    /// A raise during a cut (the provider lifting the streams-before-authentication limit) is not fought: the
    /// cut holds, and its end restores the raised limit, not the one before.
    @Test func aRaiseDuringACutIsRestoredAtItsEnd() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(options: {
            var options = HTTPServerOptions()
            options.initialMaxConcurrentStreams = { _ in 1 }
            return options
        }()) { request in
            _ = backend.handle(request)
            request.connection.session.setMaxConcurrentStreams(.max)  // as the provider does after a valid token
            var response = HTTPResponse(status: 200)
            response.connectionFault = .limitConcurrentStreams(to: 1, forNanoseconds: ms(150))
            return .response(response)
        }
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        try harness.run { h in
            h.client.request(path: "/push")
            h.client.exchange(with: h.conn)
        }
        usleep(30_000)  // the raise has hopped to the loop
        let during = try harness.run { h in
            h.client.exchange(with: h.conn)
            return (h.client.statuses[1], h.client.maxConcurrentStreamsSettings, elapsed(since: start))
        }
        #expect(during.0 == "200")
        if during.2 < ms(150) { #expect(during.1 == [1], "the raise waits for the cut's end") }
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.maxConcurrentStreamsSettings.count == 2
        })
        let restored = try harness.run { h in h.client.maxConcurrentStreamsSettings }
        #expect(restored == [1, 1000], "restored to the raised limit (capped at the configured maximum)")
        #expect(elapsed(since: start) >= ms(150))
    }

    /// A cut during a cut extends it: the newer limit is advertised, and the restore comes at the later end.
    @Test func aCutDuringACutExtendsIt() throws {
        let backend = TestBackend()
        let harness = try HandlerHarness(backend, faults: [
            "/short": .limitConcurrentStreams(to: 1, forNanoseconds: ms(100)),
            "/long": .limitConcurrentStreams(to: 2, forNanoseconds: ms(300)),
        ])
        defer { harness.stop() }
        let start = MonotonicClock.nanoseconds()
        try harness.run { h in
            h.client.request(path: "/short")
            h.client.exchange(with: h.conn)
            h.client.request(path: "/long")
            h.client.exchange(with: h.conn)
        }
        usleep(150_000)  // past the first cut's end
        let during = try harness.run { h in
            h.client.exchange(with: h.conn)
            return (h.client.maxConcurrentStreamsSettings, elapsed(since: start))
        }
        if during.1 < ms(300) { #expect(during.0 == [1000, 1, 2], "no restore at the first cut's end") }
        #expect(try harness.waitUntil { h in
            h.client.exchange(with: h.conn)
            return h.client.maxConcurrentStreamsSettings.count == 4
        })
        #expect(try harness.run { h in h.client.maxConcurrentStreamsSettings } == [1000, 1, 2, 1000])
        #expect(elapsed(since: start) >= ms(300))
    }

    /// A fault on a streaming response's head is ignored: the stream is answered normally.
    @Test func aStreamingHeadIgnoresItsFault() throws {
        let harness = try HandlerHarness { _ in
            var head = HTTPResponse(status: 200)
            head.connectionFault = .close
            return .stream(head) { writer in
                _ = writer.write(Array("x".utf8))
                writer.finish()
            }
        }
        defer { harness.stop() }
        let (status, closed) = try harness.run { h in
            h.client.request(path: "/events")
            h.client.exchange(with: h.conn)
            return (h.client.statuses[1], h.conn.isClosed)
        }
        #expect(status == "200" && !closed)
    }
}
