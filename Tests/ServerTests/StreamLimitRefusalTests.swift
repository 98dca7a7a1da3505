// APNs Sandbox — streams over SETTINGS_MAX_CONCURRENT_STREAMS are refused one by one (RST_STREAM REFUSED_STREAM),
// whether or not the client has acknowledged the limit, and the connection carries on (issue #32, item 1).
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 3))
struct StreamLimitRefusalTests {
    private static let refusedStream: UInt32 = 0x7
    private static let settingsAck = HTTP2Frame.encode(type: HTTP2Frame.settings, flags: 0x1, streamID: 0, payload: [])

    /// A push on `stream` to a device of its own (so pushes never queue behind each other).
    private static func push(_ stream: UInt32, token: String) -> [UInt8] {
        let body = Array(alertPayload.utf8)
        let headers = HTTP2Frame.requestHeaderBlock(
            method: "POST", path: "/3/device/\(Fixture.token(String(format: "%02x", stream % 256)))",
            extra: [("apns-topic", testTopic), ("authorization", "bearer \(token)"), ("content-length", "\(body.count)")])
        return HTTP2Frame.encode(type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders, streamID: stream, payload: headers)
            + HTTP2Frame.encode(type: HTTP2Frame.data, flags: HTTP2Frame.flagEndStream, streamID: stream, payload: body)
    }

    /// What the server sent on one connection, read as frames.
    private struct Wire {
        var frames: [HTTP2Frame]

        init(_ bytes: [UInt8]) { frames = HTTP2Frame.parseAll(bytes) }

        /// `:status` 200 (HPACK static index 8) with END_STREAM on `stream`.
        func answered200(_ stream: UInt32) -> Bool {
            frames.contains {
                $0.type == HTTP2Frame.headers && $0.streamID == stream && $0.payload.first == 0x88
                    && $0.flags & HTTP2Frame.flagEndStream != 0
            }
        }

        func reset(_ stream: UInt32) -> UInt32? { frames.first { $0.streamID == stream && $0.type == HTTP2Frame.rstStream }?.rstErrorCode }
        var limits: [UInt32] { frames.compactMap { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) } }
        var goAways: [HTTP2Frame] { frames.filter { $0.type == HTTP2Frame.goaway } }
        var summary: String {
            frames.map { "type \($0.type) stream \($0.streamID) flags \($0.flags) rst \($0.rstErrorCode ?? 0)" }.joined(separator: "; ")
        }

        /// The index of the first frame matching `predicate`.
        func index(where predicate: (HTTP2Frame) -> Bool) -> Int? { frames.firstIndex(where: predicate) }
    }

    /// Sequence A: SETTINGS_MAX_CONCURRENT_STREAMS 1, acknowledged, then streams 1 and 3 at once. nghttp2 alone
    /// ended the connection here (GOAWAY PROTOCOL_ERROR "max concurrent streams exceeded", last stream 1); now
    /// stream 3 is refused, stream 1 answered, the raise follows stream 1's response, and stream 3's push sent
    /// again (on stream 5) succeeds on the same connection.
    @Test func streamOverAnAcknowledgedLimitIsRefusedNotTheConnection() async throws {
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 100 }) { server in
            let token = server.test.providerToken
            let bytes = try await offload {
                let socket = try RawSocket(port: server.test.httpPort)
                try socket.send(HTTP2Frame.clientPreface)
                var seen = socket.read(timeout: TestTime.seconds(15)) { Wire($0).limits.contains(1) }.bytes
                try socket.send(Self.settingsAck + Self.push(1, token: token) + Self.push(3, token: token))
                seen += socket.read(timeout: TestTime.seconds(15)) { more in
                    let wire = Wire(seen + more)
                    return wire.answered200(1) && wire.reset(3) != nil && wire.limits.contains(100)
                }.bytes
                try socket.send(Self.settingsAck + Self.push(5, token: token))
                seen += socket.read(timeout: TestTime.seconds(15)) { Wire(seen + $0).answered200(5) }.bytes
                return seen
            }
            let wire = Wire(bytes)
            #expect(wire.answered200(1), "stream 1's push is answered: \(wire.summary)")
            #expect(wire.reset(3) == Self.refusedStream, "stream 3 is refused with REFUSED_STREAM: \(wire.summary)")
            #expect(wire.answered200(5), "the push sent again on stream 5 is answered: \(wire.summary)")
            #expect(wire.goAways.isEmpty, "no GOAWAY: \(wire.summary)")
            #expect(wire.limits == [1, 100], "\(wire.limits)")
        }
    }

    /// Sequence B: after the first valid push the limit is raised; the client opens streams 3 and 5 *before* its
    /// ACK of the raise reaches the server (Go's transport can). Both are within the limit advertised last, so both
    /// are answered (nghttp2 alone answered GOAWAY PROTOCOL_ERROR, last stream 3). And the raise is sent after the
    /// response of the push that earned it, not while its stream is open.
    @Test func streamsWithinARaiseNotYetAcknowledgedAreAnswered() async throws {
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 100 }) { server in
            let token = server.test.providerToken
            let bytes = try await offload {
                let socket = try RawSocket(port: server.test.httpPort)
                try socket.send(HTTP2Frame.clientPreface)
                var seen = socket.read(timeout: TestTime.seconds(15)) { Wire($0).limits.contains(1) }.bytes
                try socket.send(Self.settingsAck + Self.push(1, token: token))
                seen += socket.read(timeout: TestTime.seconds(15)) { more in
                    let wire = Wire(seen + more)
                    return wire.answered200(1) && wire.limits.contains(100)
                }.bytes
                try socket.send(Self.push(3, token: token) + Self.push(5, token: token) + Self.settingsAck)
                seen += socket.read(timeout: TestTime.seconds(15)) { more in
                    let wire = Wire(seen + more)
                    return wire.answered200(3) && wire.answered200(5)
                }.bytes
                return seen
            }
            let wire = Wire(bytes)
            #expect(wire.answered200(3) && wire.answered200(5), "streams 3 and 5 are answered: \(wire.summary)")
            #expect(wire.reset(3) == nil && wire.reset(5) == nil, "nothing is refused: \(wire.summary)")
            #expect(wire.goAways.isEmpty, "no GOAWAY: \(wire.summary)")
            let response = wire.index { $0.streamID == 1 && $0.type == HTTP2Frame.headers }
            let raise = wire.index { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) == 100 }
            #expect(response != nil && raise != nil && response! < raise!, "the raise follows stream 1's response: \(wire.summary)")
        }
    }

    /// A client that never acknowledges any SETTINGS: extra streams are refused one by one against the limit the
    /// server advertised last, the first push is answered, and after the raise (never acknowledged either) a burst
    /// of streams is answered in full.
    @Test func clientThatNeverAcknowledgesGetsRefusalsOnly() async throws {
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 100 }) { server in
            let token = server.test.providerToken
            let bytes = try await offload {
                let socket = try RawSocket(port: server.test.httpPort)
                try socket.send(HTTP2Frame.clientPreface + Self.push(1, token: token) + Self.push(3, token: token) + Self.push(5, token: token))
                var seen = socket.read(timeout: TestTime.seconds(15)) { more in
                    let wire = Wire(more)
                    return wire.answered200(1) && wire.reset(3) != nil && wire.reset(5) != nil && wire.limits.contains(100)
                }.bytes
                let burst: [UInt32] = Array(stride(from: 7, through: 45, by: 2))
                try socket.send(burst.flatMap { Self.push($0, token: token) })
                seen += socket.read(timeout: TestTime.seconds(30)) { more in
                    let wire = Wire(seen + more)
                    return burst.allSatisfy { wire.answered200($0) || wire.reset($0) != nil }
                }.bytes
                return seen
            }
            let wire = Wire(bytes)
            #expect(wire.answered200(1), "\(wire.summary)")
            #expect(wire.reset(3) == Self.refusedStream && wire.reset(5) == Self.refusedStream, "\(wire.summary)")
            let burst: [UInt32] = Array(stride(from: 7, through: 45, by: 2))
            #expect(burst.allSatisfy { wire.answered200($0) }, "the burst after the raise is answered: \(wire.summary)")
            #expect(wire.goAways.isEmpty, "no GOAWAY: \(wire.summary)")
        }
    }

    /// A real HTTP/2 client (Python's h2) that opens 100 streams on fresh connections without waiting for the
    /// server's SETTINGS, retries each refused stream as Go's transport and Pushy do, and writes the streams a
    /// raise allows before its ACK of the raise: 50 rounds, no push lost, no connection error, no GOAWAY.
    @Test func burstsOnFreshConnectionsLoseNoPush() async throws {
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 1000 }) { server in
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/h2_burst_client.py", "--port", "\(server.test.httpPort)",
                "--token", server.test.providerToken, "--device", deviceToken, "--topic", testTopic,
                "--rounds", "50", "--pushes", "100", "--timeout", "\(20 * TestTime.scale)",
            ], timeout: 240 * TestTime.scale)
            try #require(output.status == 0, "\(output)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdoutText.utf8)) as? [String: Any], "\(output)")
            #expect(report["ok"] as? Int == 5000, "every push answered 200: \(report)")
            #expect(report["lost"] as? Int == 0, "\(report)")
            #expect((report["goaways"] as? [Any])?.isEmpty == true, "\(report)")
            #expect((report["connectionErrors"] as? [Any])?.isEmpty == true, "\(report)")
            #expect((report["refused"] as? Int ?? 0) > 0, "the bursts went over the limit of one before the first push: \(report)")
        }
    }
}
