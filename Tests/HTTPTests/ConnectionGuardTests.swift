// APNs Sandbox — the per-connection limits as a state machine: no sockets, no clock.
import Testing

@testable import HTTP

@Suite struct ConnectionGuardTests {
    private static let second: UInt64 = 1_000_000_000

    private func makeGuard(_ change: (inout ConnectionGuard.Configuration) -> Void = { _ in }) -> ConnectionGuard {
        var configuration = ConnectionGuard.Configuration()
        change(&configuration)
        return ConnectionGuard(configuration: configuration, now: 0)
    }

    /// A bucket allows its burst at once, then refills at its rate, never above its capacity.
    @Test func tokenBucketAllowsTheBurstThenTheRate() {
        var bucket = TokenBucket(capacity: 3, perSecond: 2, now: 0)
        var taken: [Bool] = (0..<4).map { _ in bucket.take(now: 0) }
        #expect(taken == [true, true, true, false])
        taken = [bucket.take(now: Self.second / 2), bucket.take(now: Self.second / 2)]  // 0.5 s → 1 token
        #expect(taken == [true, false])
        taken = [bucket.take(5, now: 100 * Self.second), bucket.take(3, now: 100 * Self.second)]
        #expect(taken == [false, true], "never more than the capacity")
    }

    /// The reset burst passes; the next reset at the same moment is a violation, and only the first is reported.
    @Test func rapidResetsBeyondTheBurstGoAway() {
        var connectionGuard = makeGuard { $0.streamResetBurst = 200 }
        let burst = (0..<200).map { _ in connectionGuard.peerReset(now: Self.second) }
        #expect(burst.allSatisfy { $0 == .proceed })
        let next = connectionGuard.peerReset(now: Self.second)
        #expect(next == .goAway(.rapidReset))
        #expect(connectionGuard.violation == .rapidReset)
        let later = connectionGuard.peerReset(now: Self.second)
        #expect(later == .proceed, "reported once")
    }

    /// Resets at the sustained rate (33 per second) never go away.
    @Test func resetsAtTheSustainedRatePass() {
        var connectionGuard = makeGuard { $0.streamResetBurst = 10 }
        let verdicts = (0..<(33 * 60)).map { connectionGuard.peerReset(now: UInt64($0) * Self.second / 33) }
        #expect(verdicts.allSatisfy { $0 == .proceed })
    }

    /// DATA on closed streams drains its own bucket in bytes.
    @Test func discardedDataBeyondTheBurstGoesAway() {
        var connectionGuard = makeGuard {
            $0.discardedDataBurstBytes = 1 << 20
            $0.discardedDataBytesPerSecond = 1000
        }
        let first = connectionGuard.discardedData(1 << 20, now: 0)
        let second = connectionGuard.discardedData(2000, now: Self.second)
        #expect(first == .proceed)
        #expect(second == .goAway(.discardedData))
    }

    /// Header blocks for no stream drain their own bucket (256 KiB, then 64 KiB/s by default); a header block
    /// past the hard bound goes away at once; either is reported once.
    @Test func headerAbuseGoesAway() {
        var connectionGuard = makeGuard { _ in }
        #expect(connectionGuard.ignoredHeaderBlock(256 << 10, now: 0) == .proceed)
        #expect(connectionGuard.ignoredHeaderBlock(64 << 10, now: Self.second) == .proceed)
        #expect(connectionGuard.ignoredHeaderBlock(16 << 10, now: Self.second) == .goAway(.ignoredHeaderBlocks))
        #expect(connectionGuard.headerBlockTooLarge() == .proceed, "one violation per connection")
        var other = makeGuard { _ in }
        #expect(other.headerBlockTooLarge() == .goAway(.headerBlockTooLarge))
        #expect(GoAwayReason(.headerBlockTooLarge).errorCode == 0xb)
        #expect(String(decoding: GoAwayReason(.ignoredHeaderBlocks).debugData, as: UTF8.self) == #"{"reason":"TooManyHeadersOnClosedStreams"}"#)
    }

    /// Requests start while the held output is within the budget; a late response may take it to four times.
    @Test func outputBudget() {
        let connectionGuard = makeGuard { $0.maxOutputBytes = 1000 }
        #expect(connectionGuard.mayStartRequest(heldBytes: 1000))
        #expect(!connectionGuard.mayStartRequest(heldBytes: 1001))
        #expect(connectionGuard.admitsLateResponse(heldBytes: 2500, size: 1500))
        #expect(!connectionGuard.admitsLateResponse(heldBytes: 2501, size: 1500))
        #expect(connectionGuard.admitsLateResponse(heldBytes: 10_000, size: 900), "one response within the budget always fits")
    }

    /// Idle time counts from the last request activity, whatever else arrives; open requests are never idle.
    @Test func idleCountsOnlyRequestActivity() {
        var connectionGuard = makeGuard { $0.idleTimeout = 10 * Self.second }
        connectionGuard.requestActivity(now: 5 * Self.second)
        #expect(!connectionGuard.isIdle(now: 15 * Self.second, openRequests: 0))
        #expect(connectionGuard.isIdle(now: 15 * Self.second + 1, openRequests: 0))
        #expect(!connectionGuard.isIdle(now: 100 * Self.second, openRequests: 1))
        connectionGuard.requestActivity(now: 1 * Self.second)  // time never goes back
        #expect(connectionGuard.lastRequestActivity == 5 * Self.second)
    }
}

@Suite struct HTTP2FrameScannerTests {
    private static func frame(type: UInt8, stream: UInt32, length: Int) -> [UInt8] {
        [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, 0,
         UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + [UInt8](repeating: 0xAB, count: length)
    }

    private static let stream: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        + frame(type: 4, stream: 0, length: 12)  // SETTINGS
        + frame(type: 1, stream: 1, length: 30)  // HEADERS
        + frame(type: 0, stream: 1, length: 100)  // DATA
        + frame(type: 3, stream: 1, length: 4)  // RST_STREAM
        + frame(type: 0, stream: 1, length: 16_384)
        + frame(type: 0, stream: 0x7FFF_FFFF, length: 0)
        + frame(type: 9, stream: 1, length: 7)  // CONTINUATION

    /// DATA, HEADERS and CONTINUATION frames (type, stream and length) are found however the bytes are split,
    /// other frames are skipped.
    @Test(arguments: [1, 2, 7, 9, 10, 100, 1 << 20])
    func findsDataFramesAcrossSplits(chunk: Int) {
        var scanner = HTTP2FrameScanner()
        var found: [String] = []
        var index = 0
        while index < Self.stream.count {
            let end = min(index + chunk, Self.stream.count)
            Self.stream[index..<end].withUnsafeBytes { bytes in
                scanner.scan(bytes) { found.append("\($0):\($1):\($2)") }
            }
            index = end
        }
        #expect(found == ["1:1:30", "0:1:100", "0:1:16384", "0:2147483647:0", "9:1:7"])
    }
}

@Suite struct RequestCancellationTests {
    /// Handlers run once when cancelled, at once when registered after; a second cancel does nothing.
    @Test func runsHandlersOnce() {
        final class Counter: @unchecked Sendable { var value = 0 }
        let counter = Counter()
        let cancellation = RequestCancellation()
        cancellation.onCancel { counter.value += 1 }
        #expect(!cancellation.isCancelled)
        cancellation.cancel()
        cancellation.cancel()
        #expect(cancellation.isCancelled)
        #expect(counter.value == 1)
        cancellation.onCancel { counter.value += 10 }
        #expect(counter.value == 11)
    }

    /// A blocking job whose request is cancelled before it starts never runs.
    @Test func cancelledBlockingWorkIsSkipped() async {
        let pipeline = HTTPPipeline(responder: Router(), options: HTTPServerOptions(), logger: .init(label: "test"))
        defer { pipeline.shutdown() }
        let request = HTTPRequest(method: "GET", target: "/")
        request.cancellation.cancel()
        let ran = await withCheckedContinuation { continuation in
            pipeline.runBlocking({ HTTPResponse(status: 200) }, for: request) { continuation.resume(returning: $0 != nil) }
        }
        #expect(!ran)
        let live = HTTPRequest(method: "GET", target: "/")
        let status = await withCheckedContinuation { continuation in
            pipeline.runBlocking({ HTTPResponse(status: 204) }, for: live) { continuation.resume(returning: $0?.status) }
        }
        #expect(status == 204)
    }
}

@Suite struct AbsoluteFormTests {
    /// `http://host[:port]/path?query` is split into the authority and the origin form (RFC 9112 §3.2.2).
    @Test(arguments: [
        ("http://api.push.apple.com/3/device/ab", "api.push.apple.com", "/3/device/ab"),
        ("HTTPS://h:2197/x?y=1", "h:2197", "/x?y=1"),
        ("http://h", "h", "/"),
        ("http://h?q", "h", "/?q"),
        ("http://h/p#frag", "h", "/p"),
    ])
    func splitsAbsoluteForm(target: String, authority: String, path: String) throws {
        let split = try #require(HTTP1ConnectionHandler.absoluteForm(target))
        #expect(split.authority == authority)
        #expect(split.pathAndQuery == path)
    }

    /// Origin, asterisk and other schemes are left alone.
    @Test(arguments: ["/3/device/ab", "*", "ftp://h/x", "http:///x", "h:443"])
    func leavesOtherFormsAlone(target: String) {
        #expect(HTTP1ConnectionHandler.absoluteForm(target) == nil)
    }
}

@Suite struct HTTP2SettingsRewriterTests {
    private static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
                UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    private static func entry(_ id: UInt16, _ value: UInt32) -> [UInt8] {
        [UInt8(id >> 8), UInt8(id & 0xFF), UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static let placeholder = HTTP2StreamLimitSetting.placeholderID

    /// What nghttp2 writes: SETTINGS with the placeholder among other entries, a DATA frame whose payload holds the
    /// placeholder's bytes at entry offsets, a SETTINGS ACK, HEADERS, a later SETTINGS with the placeholder only.
    private static let frames: [[UInt8]] = [
        frame(type: 4, payload: entry(placeholder, 1) + entry(6, 8000) + entry(4, 1 << 20)),
        frame(type: 0, stream: 1, payload: entry(placeholder, 7) + entry(placeholder, 9)),
        frame(type: 4, flags: 1, payload: []),
        frame(type: 1, flags: 5, stream: 1, payload: [0x88]),
        frame(type: 4, payload: entry(placeholder, 1000)),
    ]

    private static var expected: [UInt8] {
        var out = frames
        out[0] = frame(type: 4, payload: entry(3, 1) + entry(6, 8000) + entry(4, 1 << 20))
        out[4] = frame(type: 4, payload: entry(3, 1000))
        return out.flatMap { $0 }
    }

    /// Frame by frame, as nghttp2's mem_send returns them: every placeholder in a SETTINGS frame becomes
    /// SETTINGS_MAX_CONCURRENT_STREAMS, nothing else changes, and chunks without SETTINGS are not copied.
    @Test func rewritesThePlaceholderInSettingsFramesOnly() {
        var rewriter = HTTP2SettingsRewriter()
        var out: [UInt8] = []
        var copied: [Bool] = []
        for frame in Self.frames {
            frame.withUnsafeBytes { chunk in
                let patched = rewriter.rewrite(chunk)
                copied.append(patched != nil)
                out += patched ?? frame
            }
        }
        #expect(out == Self.expected)
        #expect(copied == [true, false, false, false, true])
        #expect(rewriter.unpatched == 0)
    }

    /// However the bytes are split, frame boundaries are followed (the DATA payload is never touched), and an id
    /// split across two chunks is the only one left as it is (and counted).
    @Test(arguments: [1, 2, 3, 7, 9, 10, 64])
    func followsFramesAcrossSplits(chunk size: Int) {
        let stream = Self.frames.flatMap { $0 }
        var rewriter = HTTP2SettingsRewriter()
        var out: [UInt8] = []
        var index = 0
        while index < stream.count {
            let piece = Array(stream[index..<min(index + size, stream.count)])
            piece.withUnsafeBytes { out += rewriter.rewrite($0) ?? piece }
            index += piece.count
        }
        let differences = zip(out, Self.expected).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
        // Each difference is an id left as the placeholder: its first byte 0xF3 where 0x00 was expected.
        #expect(differences.allSatisfy { out[$0] == 0xF3 || out[$0] == 0xA7 }, "\(differences)")
        #expect(differences.count == 2 * rewriter.unpatched, "\(differences) unpatched \(rewriter.unpatched)")
        if size == 1 { #expect(rewriter.unpatched == 2) }
    }
}
