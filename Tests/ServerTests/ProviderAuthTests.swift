// APNs Sandbox — provider-token authentication end to end: the stream limit before and after the
// first valid token, and the verified-token cache.
import Foundation
import Server
import TestProcessSupport
import Testing

// A hang detector: the cases wait for one of the six provider-server slots (see `withProviderServer`)
// while the full suite loads both cores; a green CI run (on a1a8112, with the bulk queue) had them done at 81–88 s.
@Suite(.scaledTimeLimit(minutes: 2))
struct ProviderAuthTests {
    /// A push with an invalid token leaves SETTINGS_MAX_CONCURRENT_STREAMS at 1 on raw h2c; the next, valid push raises it.
    @Test func streamLimitStaysAtOneUntilAValidToken() async throws {
        // `providerStreamLimitIsRaisedAfterAuthentication` (HTTP2EndToEndTests) covers a valid first
        // push; this covers a rejected one first.
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 50 }) { server in
            let body = Array(alertPayload.utf8)
            @Sendable func request(_ stream: UInt32, token: String) -> [UInt8] {
                let headers = HTTP2Frame.requestHeaderBlock(
                    method: "POST", path: "/3/device/\(deviceToken)",
                    extra: [("apns-topic", testTopic), ("authorization", "bearer \(token)"), ("content-length", "\(body.count)")])
                return HTTP2Frame.encode(type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders, streamID: stream, payload: headers)
                    + HTTP2Frame.encode(type: HTTP2Frame.data, flags: HTTP2Frame.flagEndStream, streamID: stream, payload: body)
            }
            @Sendable func ended(_ stream: UInt32, _ bytes: [UInt8]) -> Bool {
                HTTP2Frame.parseAll(bytes).contains {
                    $0.streamID == stream && ($0.type == HTTP2Frame.data || $0.type == HTTP2Frame.headers)
                        && $0.flags & HTTP2Frame.flagEndStream != 0
                }
            }
            let valid = server.test.providerToken
            let (first, second) = try await offload {
                let socket = try RawSocket(port: server.test.httpPort)
                try socket.send(HTTP2Frame.clientPreface + request(1, token: "garbage"))
                let first = socket.read(timeout: TestTime.seconds(15)) { ended(1, $0) }
                try socket.send(request(3, token: valid))
                let second = socket.read(timeout: TestTime.seconds(15)) { bytes in
                    ended(3, bytes)
                        && HTTP2Frame.parseAll(bytes).contains { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) != nil }
                }
                return (first, second)
            }
            let firstFrames = HTTP2Frame.parseAll(first.bytes)
            let limitsBefore = firstFrames.compactMap { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) }
            #expect(limitsBefore == [1], "one stream before a valid token, not raised by a rejected one: \(limitsBefore)")
            let rejection = firstFrames.filter { $0.type == HTTP2Frame.data && $0.streamID == 1 }.flatMap(\.payload)
            #expect(String(decoding: rejection, as: UTF8.self) == #"{"reason":"InvalidProviderToken"}"#)
            let secondFrames = HTTP2Frame.parseAll(second.bytes)
            let response = try #require(secondFrames.first { $0.type == HTTP2Frame.headers && $0.streamID == 3 }, "no response")
            #expect(response.payload.first == 0x88, ":status 200 (HPACK static index 8)")
            let limitsAfter = secondFrames.compactMap { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) }
            #expect(limitsAfter == [50], "raised to limits.maxConcurrentStreams after the valid push: \(limitsAfter)")
        }
    }

    /// A client that opens two streams before reading the server's SETTINGS gets stream 1 answered and stream 3 refused (REFUSED_STREAM).
    @Test func secondConcurrentStreamBeforeAuthenticationIsRefused() async throws {
        try await withProviderServer { server in
            let body = Array(alertPayload.utf8)
            let token = server.test.providerToken
            @Sendable func request(_ stream: UInt32, device: String) -> [UInt8] {
                let headers = HTTP2Frame.requestHeaderBlock(
                    method: "POST", path: "/3/device/\(device)",
                    extra: [("apns-topic", testTopic), ("authorization", "bearer \(token)"), ("content-length", "\(body.count)")])
                return HTTP2Frame.encode(type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders, streamID: stream, payload: headers)
                    + HTTP2Frame.encode(type: HTTP2Frame.data, flags: HTTP2Frame.flagEndStream, streamID: stream, payload: body)
            }
            let result = try await offload {
                let socket = try RawSocket(port: server.test.httpPort)
                try socket.send(HTTP2Frame.clientPreface + request(1, device: Fixture.token("31")) + request(3, device: Fixture.token("33")))
                return socket.read(timeout: TestTime.seconds(15)) { bytes in
                    let frames = HTTP2Frame.parseAll(bytes)
                    return frames.contains { $0.streamID == 1 && $0.type == HTTP2Frame.headers }
                        && frames.contains { $0.streamID == 3 && ($0.type == HTTP2Frame.headers || $0.type == HTTP2Frame.rstStream) }
                }
            }
            let frames = HTTP2Frame.parseAll(result.bytes)
            let summary = frames.map { "type \($0.type) stream \($0.streamID) rst \($0.rstErrorCode ?? 0) goaway \($0.goawayErrorCode ?? 0)" }
            let first = try #require(frames.first { $0.streamID == 1 && $0.type == HTTP2Frame.headers }, "stream 1 unanswered: \(summary)")
            #expect(first.payload.first == 0x88, "stream 1 gets 200")
            let reset = frames.first { $0.streamID == 3 && $0.type == HTTP2Frame.rstStream }
            #expect(reset?.rstErrorCode == 0x7, "stream 3 is refused with REFUSED_STREAM: \(summary)")
            #expect(!frames.contains { $0.type == HTTP2Frame.goaway }, "the connection stays up: \(summary)")
        }
    }

    /// A stream refused before authentication is explained in the debug log: which limit, why, and the setting
    /// that lifts it for load tools; the connection's count of refused streams is logged when it closes.
    @Test func refusedStreamIsExplainedInTheDebugLog() async throws {
        try await withServer(logLevel: .debug, configure: { $0.apns.streamsBeforeAuthentication = 1 }) { server in
            let body = Array(alertPayload.utf8)
            let token = server.providerToken
            @Sendable func request(_ stream: UInt32) -> [UInt8] {
                let headers = HTTP2Frame.requestHeaderBlock(
                    method: "POST", path: "/3/device/\(deviceToken)",
                    extra: [("apns-topic", testTopic), ("authorization", "bearer \(token)"), ("content-length", "\(body.count)")])
                return HTTP2Frame.encode(type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders, streamID: stream, payload: headers)
                    + HTTP2Frame.encode(type: HTTP2Frame.data, flags: HTTP2Frame.flagEndStream, streamID: stream, payload: body)
            }
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(HTTP2Frame.clientPreface + request(1) + request(3) + request(5))
                return socket.read(timeout: TestTime.seconds(15)) { bytes in
                    let frames = HTTP2Frame.parseAll(bytes)
                    return frames.contains { $0.streamID == 1 && $0.type == HTTP2Frame.headers }
                        && frames.filter { $0.type == HTTP2Frame.rstStream }.count >= 2
                }
            }
            let resets = HTTP2Frame.parseAll(result.bytes).filter { $0.type == HTTP2Frame.rstStream }
            #expect(resets.map(\.streamID) == [3, 5] && resets.allSatisfy { $0.rstErrorCode == 0x7 }, "REFUSED_STREAM")
            let lines = try await pollFor("two debug lines about the refusals: \(server.logSink.capturedLines)") {
                let lines = server.logSink.capturedLines.filter { $0.contains(" debug ") && $0.contains("REFUSED_STREAM") }
                return lines.count >= 2 ? lines : nil
            }
            let first = try #require(lines.first)
            #expect(first.contains("h2.stream_id=3"), "\(first)")
            #expect(first.contains("SETTINGS_MAX_CONCURRENT_STREAMS") && first.contains("limit=1"), "\(first)")
            #expect(first.contains("valid provider token") && first.contains("streamsBeforeAuthentication"), "\(first)")
            await server.shutdown()
            let summary = server.logSink.capturedLines.first { $0.contains(" debug ") && $0.contains("refused=2") }
            #expect(summary != nil, "the connection's refusals are counted when it closes: \(server.logSink.capturedLines)")
        }
    }

    /// On h2c and h2 over TLS the limit is 1 on a fresh connection, 1 after MissingProviderToken, the configured limit after a 200.
    @Test(arguments: [ProviderTransport.h2c, .h2TLS])
    func streamLimitIsRaisedByTheFirstValidToken(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 77 }) { server in
            let specs = [
                PushSpec.push(authorization: nil),
                PushSpec.push(authorization: server.test.providerToken),
                PushSpec.push(authorization: server.test.providerToken),
            ]
            let sequence = try await server.h2Sequence(specs, tls: transport.isTLS)
            #expect(sequence.initialMaxConcurrentStreams == 1)
            expectReply(sequence.replies[0], .rejected(403, "MissingProviderToken"), for: specs[0])
            expectReply(sequence.replies[1], .accepted, for: specs[1])
            expectReply(sequence.replies[2], .accepted, for: specs[2])
            #expect(sequence.maxConcurrentStreamsAfter == [1, 77, 77])
        }
    }

    /// With `streamsBeforeAuthentication = 0` the full limit is offered from the start.
    @Test func streamLimitIsFullWithoutTheAuthenticationStep() async throws {
        try await withProviderServer(configure: {
            $0.limits.maxConcurrentStreams = 64
            $0.apns.streamsBeforeAuthentication = 0
        }) { server in
            let specs = [PushSpec.push(authorization: server.test.providerToken)]
            let sequence = try await server.h2Sequence(specs, tls: false)
            #expect(sequence.initialMaxConcurrentStreams == 64)
            expectReply(sequence.replies[0], .accepted, for: specs[0])
            #expect(sequence.maxConcurrentStreamsAfter == [64])
        }
    }

    /// Hundreds of pushes with one token on one connection all get 200 (the token is verified once, then cached).
    @Test(arguments: ProviderTransport.allCases)
    func oneTokenServesManyPushes(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let count = 200
            let specs = (0..<count).map { index in
                PushSpec.push(token: Fixture.token(hexByte(index)), authorization: server.test.providerToken)
            }
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            #expect(replies.count == count)
            #expect(replies.filter { $0.status == 200 }.count == count, "\(replies.first { $0.status != 200 }.map(\.description) ?? "")")
            for (reply, spec) in zip(replies, specs).prefix(3) { expectReply(reply, .accepted, for: spec) }
            let ids = Set(replies.compactMap { $0.header("apns-id") })
            #expect(ids.count == count, "every push has its own apns-id")
            // The cached token also works on fresh connections.
            for _ in 0..<3 {
                let spec = PushSpec.push(authorization: server.test.providerToken)
                expectReply(try await server.push(spec, over: transport), .accepted, for: spec)
            }
            let log = try await server.pushLog(limit: 1000)
            #expect(log.accepted == count + 3)
            #expect(log.rejected == 0)
            let connections = Set(log.pushes.prefix(count + 3).suffix(count).compactMap { $0["connectionId"] as? Int })
            #expect(connections.count == 1, "the \(count) pushes shared one connection: \(connections)")
        }
    }

    /// A token whose signature was altered is rejected even after the genuine token was verified and cached.
    @Test(arguments: ProviderTransport.allCases)
    func tamperedCopyOfACachedTokenIsRejected(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.apns.tokenUpdateMinimumIntervalSeconds = 0 }) { server in
            let genuine = server.test.providerToken
            var characters = Array(genuine)
            let index = characters.count - 20
            characters[index] = characters[index] == "A" ? "B" : "A"
            let tampered = String(characters)
            #expect(tampered != genuine)
            let specs = [PushSpec.push(authorization: genuine), PushSpec.push(authorization: tampered),
                         PushSpec.push(authorization: genuine)]
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .rejected(403, "InvalidProviderToken"), for: specs[1])
            expectReply(replies[2], .accepted, for: specs[2])
            let fresh = PushSpec.push(authorization: tampered)
            expectReply(try await server.push(fresh, over: transport), .rejected(403, "InvalidProviderToken"), for: fresh)
        }
    }

    /// A non-bearer scheme is InvalidProviderToken even when its JWT was already accepted on the connection.
    @Test(arguments: ProviderTransport.allCases)
    func schemeIsCheckedOnEveryPush(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let token = server.test.providerToken
            var basic = PushSpec.push(authorization: nil)
            basic.headers.append(("authorization", "basic \(token)"))
            var bearerCapitalised = PushSpec.push(authorization: nil)
            bearerCapitalised.headers.append(("authorization", "Bearer \(token)"))
            let specs = [PushSpec.push(authorization: token), basic, bearerCapitalised]
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .rejected(403, "InvalidProviderToken"), for: specs[1])
            expectReply(replies[2], .accepted, for: specs[2])
            // The same request on a fresh connection.
            expectReply(try await server.push(basic, over: transport), .rejected(403, "InvalidProviderToken"), for: basic)
        }
    }

    /// A token accepted once is still checked for age on later pushes of the same connection (ExpiredProviderToken):
    /// the clock stands still and is advanced past the token's hour (sandbox time) between the two pushes.
    @Test(arguments: ProviderTransport.allCases)
    func cachedTokenStillExpires(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.clock = ClockSettings(virtual: true, frozen: true) }) { server in
            let token = try server.token(issuedAt: try await server.clockSeconds())
            let specs = [PushSpec.push(authorization: token), PushSpec.push(authorization: token)]
            let replies = try await server.pushOnOneConnection(specs, over: transport) { _ in
                try await server.advanceClock(milliseconds: 3_601_000)
            }
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .rejected(403, "ExpiredProviderToken"), for: specs[1])
        }
    }
}

/// `index` as two lowercase hex digits.
private func hexByte(_ index: Int) -> String {
    let hex = String(index % 256, radix: 16)
    return hex.count == 1 ? "0" + hex : hex
}
