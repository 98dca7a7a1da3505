// APNs Sandbox — end to end over HTTP/2: h2c, TLS with ALPN, TLS without ALPN, limits, idle GOAWAY.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTP2EndToEndTests {
    static let payload = #"{"aps":{"alert":"Hello"}}"#

    /// `curl --http2-prior-knowledge` GET /healthz over h2c answers HTTP/2 200 `{"status":"ok"}`.
    @Test func healthzOverH2C() async throws {
        try await withServer { server in
            let output = try await curl(["--http2-prior-knowledge", "-D", "-", "\(server.httpBase)/healthz"])
            #expect(output.status == 0, "\(output)")
            let response = try #require(CurlResponse(output.stdout), "\(output)")
            #expect(response.statusLine.hasPrefix("HTTP/2 "))
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/json")
            #expect(response.bodyText == #"{"status":"ok"}"#)
        }
    }

    /// A push over h2c answers 200 with a fresh lowercase-UUID `apns-id` and an empty body.
    @Test func pushOverH2CAnswers200WithFreshApnsID() async throws {
        try await withServer { server in
            var ids: [String] = []
            for _ in 0..<2 {
                let output = try await curl([
                    "--http2-prior-knowledge", "-D", "-", "-X", "POST", "-H", server.authorizationHeader,
                    "-H", "apns-topic: com.example.app", "-H", "content-type: application/json",
                    "-d", Self.payload, "\(server.httpBase)/3/device/\(deviceToken)",
                ])
                #expect(output.status == 0, "\(output)")
                let response = try #require(CurlResponse(output.stdout), "\(output)")
                #expect(response.statusLine.hasPrefix("HTTP/2 "))
                #expect(response.status == 200)
                let apnsID = try #require(response.header("apns-id"), "no apns-id in \(response.headers)")
                #expect(isLowercaseUUID(apnsID), "apns-id \(apnsID) is not a lowercase UUID")
                #expect(response.body.isEmpty, "a 200 push has no body, got \(response.bodyText)")
                #expect(response.header("content-length") == nil || response.header("content-length") == "0")
                ids.append(apnsID)
            }
            #expect(ids[0] != ids[1], "every push gets its own apns-id")
        }
    }

    /// A client-supplied canonical `apns-id` is echoed back, lowercased.
    @Test func clientApnsIDIsEchoedLowercased() async throws {
        try await withServer { server in
            let output = try await curl([
                "--http2-prior-knowledge", "-D", "-", "-X", "POST", "-H", server.authorizationHeader,
                "-H", "apns-topic: com.example.app", "-H", "apns-id: 123E4567-E89B-12D3-A456-4266554400A0",
                "-d", Self.payload, "\(server.httpBase)/3/device/\(deviceToken)",
            ])
            #expect(output.status == 0, "\(output)")
            let response = try #require(CurlResponse(output.stdout), "\(output)")
            #expect(response.status == 200)
            #expect(response.header("apns-id") == "123e4567-e89b-12d3-a456-4266554400a0")
            #expect(response.body.isEmpty)
        }
    }

    /// The 200 to a push is one HEADERS frame with END_STREAM and no DATA frame (nghttp's frame trace).
    @Test func pushResponseHasNoDataFrame() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let payloadFile = directory + "/payload.json"
            _ = FileManager.default.createFile(atPath: payloadFile, contents: Data(Self.payload.utf8))
            let output = try await run("nghttp", args: [
                "-nv", "-t", "10", "-d", payloadFile, "-H", "apns-topic: com.example.app", "-H", server.authorizationHeader,
                "\(server.httpBase)/3/device/\(deviceToken)",
            ])
            #expect(output.status == 0, "\(output)")
            let trace = output.stdoutText
            #expect(trace.contains(":status: 200"), "\(trace)")
            #expect(!trace.contains("recv DATA frame"), "the 200 must not carry a DATA frame:\n\(trace)")
            // The response HEADERS frame ends the stream itself.
            let lines = trace.components(separatedBy: "\n")
            let index = try #require(lines.firstIndex { $0.contains("recv HEADERS frame") }, "\(trace)")
            #expect(lines[index + 1].contains("END_STREAM"), "\(lines[index...].prefix(3))")
        }
    }

    /// Over TLS, `curl --http2 --cacert ca.pem` negotiates h2 with ALPN and gets 200 for health and push.
    @Test func tlsWithALPNNegotiatesH2() async throws {
        try await withServer { server in
            let health = try await curl(server.curlResolve + [
                "--http2", "--cacert", server.caPath, "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                "\(server.tlsBase)/healthz",
            ])
            #expect(health.status == 0, "\(health)")
            #expect(health.stdoutText == "2 200")

            let push = try await curl(server.curlResolve + [
                "--http2", "-v", "--cacert", server.caPath, "-D", "-", "-X", "POST", "-H", "apns-topic: com.example.app",
                "-H", server.authorizationHeader,
                "-d", Self.payload, "\(server.tlsBase)/3/device/\(deviceToken)",
            ])
            #expect(push.status == 0, "\(push)")
            #expect(push.stderrText.contains("ALPN: server accepted h2"), "\(push.stderrText)")
            let response = try #require(CurlResponse(push.stdout), "\(push)")
            #expect(response.statusLine.hasPrefix("HTTP/2 "))
            #expect(response.status == 200)
            #expect(isLowercaseUUID(response.header("apns-id") ?? ""))
            #expect(response.body.isEmpty)
        }
    }

    /// HTTP/2 over TLS without ALPN (aioapns-style): concurrent requests all answer 200; no ALPN was selected.
    @Test func tlsWithoutALPNServesConcurrentH2Streams() async throws {
        try await withServer { server in
            let common = [
                TestPaths.noALPNClient, "--host", "127.0.0.1", "--port", "\(server.tlsPort)",
                "--cafile", server.caPath, "--server-name", "localhost",
            ]
            let health = try await run("python3", args: common + ["--path", "/healthz", "--requests", "6"])
            #expect(health.status == 0, "\(health)")
            let healthResult = try #require(jsonObject(health.stdoutText), "\(health)")
            #expect(healthResult["alpn"] is NSNull, "alpn should be null: \(healthResult)")
            #expect(healthResult["statuses"] as? [Int] == Array(repeating: 200, count: 6))
            #expect(healthResult["bodies"] as? [String] == Array(repeating: #"{"status":"ok"}"#, count: 6))

            let push = try await run("python3", args: common + [
                "--method", "POST", "--path", "/3/device/\(deviceToken)", "--requests", "8",
                "--header", "apns-topic: com.example.app", "--header", server.authorizationHeader, "--data", Self.payload,
            ])
            #expect(push.status == 0, "\(push)")
            let pushResult = try #require(jsonObject(push.stdoutText), "\(push)")
            #expect(pushResult["alpn"] is NSNull)
            #expect(pushResult["statuses"] as? [Int] == Array(repeating: 200, count: 8))
            #expect(pushResult["dataFrames"] as? [Int] == Array(repeating: 0, count: 8), "a 200 push has no DATA frame")
            let headers = try #require(pushResult["headers"] as? [[String: String]])
            let ids = headers.compactMap { $0["apns-id"] }
            #expect(ids.count == 8)
            #expect(ids.allSatisfy(isLowercaseUUID), "\(ids)")
            #expect(Set(ids).count == 8, "apns-ids must be distinct: \(ids)")
        }
    }

    /// A request header list over SETTINGS_MAX_HEADER_LIST_SIZE (8000) is answered 431 with a JSON error.
    @Test func oversizedHeaderListIs431() async throws {
        try await withServer { server in
            let big = String(repeating: "a", count: 9000)
            let output = try await curl([
                "--http2-prior-knowledge", "-D", "-", "-H", "x-big: \(big)", "\(server.httpBase)/healthz",
            ])
            #expect(output.status == 0, "\(output)")
            let response = try #require(CurlResponse(output.stdout), "\(output)")
            #expect(response.statusLine.hasPrefix("HTTP/2 "))
            #expect(response.status == 431)
            #expect(errorCode(response.body) == "header_list_too_large", "\(response.bodyText)")
        }
    }

    /// An idle h2c connection is sent GOAWAY (NO_ERROR) and closed after `idleTimeoutSeconds`.
    @Test func idleH2CConnectionGetsGoawayAndIsClosed() async throws {
        try await withServer(configure: { $0.limits.idleTimeoutSeconds = 1 }) { server in
            // Real time (sockets): measured from before the connection, so a test thread that runs late cannot make
            // it look early; the upper bound is the timeout plus a loaded machine's slack.
            let (result, elapsed) = try await offload {
                let started = monotonicSeconds()
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(HTTP2Frame.clientPreface)
                let result = socket.readUntilClose(timeout: TestTime.timeoutBound(1) + 5)
                return (result, monotonicSeconds() - started)
            }
            let frames = HTTP2Frame.parseAll(result.bytes)
            #expect(frames.first?.type == HTTP2Frame.settings, "the server starts with SETTINGS")
            let goaway = try #require(frames.first { $0.type == HTTP2Frame.goaway }, "no GOAWAY in \(frames.map(\.type))")
            #expect(goaway.goawayErrorCode == 0)
            #expect(result.closed, "the connection is closed after GOAWAY")
            #expect(elapsed > 0.9 && elapsed < TestTime.timeoutBound(1), "closed after \(elapsed) s, idle timeout is 1 s")
        }
    }

    /// A stream whose request never ends is reset (RST_STREAM CANCEL) after `requestTimeoutSeconds`; the connection still serves.
    @Test func stalledH2StreamIsResetAndConnectionKeepsServing() async throws {
        try await withServer(configure: { $0.limits.requestTimeoutSeconds = 1 }) { server in
            // Real time (sockets): measured from before the request is sent, so a test thread that runs late cannot
            // make the reset look early; the upper bound is the timeout plus a loaded machine's slack.
            let (stalled, resetAfter, next) = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                // POST headers without END_STREAM, and never a body.
                let headers = HTTP2Frame.requestHeaderBlock(
                    method: "POST", path: "/3/device/\(deviceToken)", extra: [("apns-topic", "com.example.app")])
                let started = monotonicSeconds()
                try socket.send(HTTP2Frame.clientPreface
                    + HTTP2Frame.encode(type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders, streamID: 1, payload: headers))
                let stalled = socket.read(timeout: TestTime.timeoutBound(1) + 5) { bytes in
                    HTTP2Frame.parseAll(bytes).contains { $0.type == HTTP2Frame.rstStream || $0.type == HTTP2Frame.goaway }
                }
                let resetAfter = monotonicSeconds() - started
                let get = HTTP2Frame.requestHeaderBlock(method: "GET", path: "/healthz")
                try socket.send(HTTP2Frame.encode(
                    type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders | HTTP2Frame.flagEndStream, streamID: 3, payload: get))
                let next = socket.read(timeout: TestTime.seconds(15)) { bytes in
                    HTTP2Frame.parseAll(bytes).contains { $0.streamID == 3 && $0.flags & HTTP2Frame.flagEndStream != 0 }
                }
                return (stalled, resetAfter, next)
            }
            let frames = HTTP2Frame.parseAll(stalled.bytes)
            let reset = try #require(frames.first { $0.type == HTTP2Frame.rstStream }, "no RST_STREAM: \(frames.map(\.type))")
            #expect(reset.streamID == 1)
            #expect(reset.rstErrorCode == 0x8, "CANCEL")
            #expect(!frames.contains { $0.type == HTTP2Frame.headers }, "no response on the stalled stream")
            #expect(resetAfter > 0.9 && resetAfter < TestTime.timeoutBound(1), "reset after \(resetAfter) s, timeout is 1 s")

            let answer = HTTP2Frame.parseAll(next.bytes).filter { $0.streamID == 3 }
            let head = try #require(answer.first { $0.type == HTTP2Frame.headers }, "no response on stream 3")
            #expect(head.payload.first == 0x88, ":status 200 (HPACK static index 8)")
            let body = answer.filter { $0.type == HTTP2Frame.data }.flatMap(\.payload)
            #expect(String(decoding: body, as: UTF8.self) == #"{"status":"ok"}"#)
            #expect(!next.closed)
        }
    }

    /// Bodies up to maxBodyBytes pass HTTP/2 flow control and reach routing (404 here); larger ones are 413 on h2c and TLS h2.
    @Test func largeH2BodiesAreAcceptedUpToTheLimit() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            _ = FileManager.default.createFile(atPath: directory + "/fits", contents: Data(repeating: 0x61, count: 1_000_000))
            _ = FileManager.default.createFile(atPath: directory + "/too-big", contents: Data(repeating: 0x61, count: 1_048_577))
            // Not the push endpoint: APNs' own 4 KB payload limit would answer first there.
            let url = "/upload-target"
            let fits = try await curl([
                "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-H", "content-type: application/json",
                "--data-binary", "@\(directory)/fits", server.httpBase + url,
            ])
            #expect(fits.stdoutText == "404", "the whole body was read and the request routed: \(fits)")
            for base in [["--http2-prior-knowledge", server.httpBase + url],
                         server.curlResolve + ["--http2", "--cacert", server.caPath, server.tlsBase + url]] {
                let tooBig = try await curl(["-D", "-", "--data-binary", "@\(directory)/too-big"] + base)
                let response = try #require(CurlResponse(tooBig.stdout), "\(tooBig)")
                #expect(response.status == 413, "\(base.last!)")
                #expect(errorCode(response.body) == "body_too_large", "\(response.bodyText)")
            }
        }
    }

    /// With APNs' default, a fresh connection announces SETTINGS_MAX_CONCURRENT_STREAMS 1; a valid provider token raises it to `limits.maxConcurrentStreams`.
    @Test func providerStreamLimitIsRaisedAfterAuthentication() async throws {
        try await withServer(configure: {
            $0.apns.streamsBeforeAuthentication = 1
            $0.limits.maxConcurrentStreams = 50
        }) { server in
            let body = Array(Self.payload.utf8)
            let headers = HTTP2Frame.requestHeaderBlock(
                method: "POST", path: "/3/device/\(deviceToken)",
                extra: [("apns-topic", testTopic), ("authorization", "bearer \(server.providerToken)"),
                        ("content-length", "\(body.count)")])
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(HTTP2Frame.clientPreface
                    + HTTP2Frame.encode(type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders, streamID: 1, payload: headers)
                    + HTTP2Frame.encode(type: HTTP2Frame.data, flags: HTTP2Frame.flagEndStream, streamID: 1, payload: body))
                return socket.read(timeout: TestTime.seconds(15)) { bytes in
                    let frames = HTTP2Frame.parseAll(bytes)
                    return frames.contains { $0.type == HTTP2Frame.headers && $0.streamID == 1 }
                        && frames.filter { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) != nil }.count >= 2
                }
            }
            let frames = HTTP2Frame.parseAll(result.bytes)
            let limits = frames.compactMap { $0.setting(HTTP2Frame.settingsMaxConcurrentStreams) }
            let response = try #require(frames.first { $0.type == HTTP2Frame.headers && $0.streamID == 1 }, "no response")
            #expect(response.payload.first == 0x88, ":status 200 (HPACK static index 8)")
            #expect(limits.first == 1, "one stream before authentication: \(limits)")
            #expect(limits.count >= 2, "the limit is raised after the first valid token: \(limits)")
            #expect(limits.last == 50, "raised to limits.maxConcurrentStreams (50), got \(limits)")
        }
    }
}
