// APNs Sandbox — end to end over HTTP/1.1: keep-alive, pipelining, 100-continue, gzip, timeouts.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTP1EndToEndTests {
    /// One `curl --http1.1` run with three URLs over cleartext reuses a single keep-alive connection.
    @Test func keepAliveReusesOneConnectionOverCleartext() async throws {
        try await withServer { server in
            let output = try await curl(
                ["--http1.1"] + Array(repeating: ["-o", "/dev/null"], count: 3).flatMap { $0 } + [
                    "-w", "%{num_connects} %{http_code} %{http_version}\\n",
                    "\(server.httpBase)/healthz", "\(server.httpBase)/ca.pem", "\(server.httpBase)/readyz",
                ])
            #expect(output.status == 0, "\(output)")
            try Self.expectOneConnection(output)
        }
    }

    /// The same over TLS (ALPN http/1.1): three URLs, one connection, all 200.
    @Test func keepAliveReusesOneConnectionOverTLS() async throws {
        try await withServer { server in
            let output = try await curl(
                server.curlResolve + ["--http1.1", "--cacert", server.caPath]
                    + Array(repeating: ["-o", "/dev/null"], count: 3).flatMap { $0 } + [
                        "-w", "%{num_connects} %{http_code} %{http_version}\\n",
                        "\(server.tlsBase)/healthz", "\(server.tlsBase)/ca.pem", "\(server.tlsBase)/readyz",
                    ])
            #expect(output.status == 0, "\(output)")
            try Self.expectOneConnection(output)
        }
    }

    private static func expectOneConnection(_ output: ProcessOutput) throws {
        let lines = output.stdoutText.split(separator: "\n").map { $0.split(separator: " ") }
        try #require(lines.count == 3, "\(output)")
        #expect(lines.map { $0[1] } == ["200", "200", "200"], "\(output.stdoutText)")
        #expect(lines.map { $0[2] } == ["1.1", "1.1", "1.1"], "\(output.stdoutText)")
        let connects = lines.compactMap { Int($0[0]) }.reduce(0, +)
        #expect(connects == 1, "num_connects per URL: \(output.stdoutText)")
    }

    /// Three pipelined requests in one write (GET, GET, POST with a body) get three responses, in order.
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer { server in
            let body = #"{"aps":{"alert":"pipelined"}}"#
            let requests = "GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n"
                + "POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: e2e\r\napns-topic: com.example.app\r\n"
                + "\(server.authorizationHeader)\r\n"
                + "apns-id: 00000000-0000-0000-0000-000000000003\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(requests)
                return socket.readResponses(3, timeout: TestTime.seconds(15))
            }
            let responses = result.responses
            try #require(responses.count == 3, "got: \(result.text)")
            #expect(responses.map(\.status) == [200, 200, 200])
            #expect(responses[0].bodyText == #"{"status":"ok"}"#)
            #expect(responses[1].bodyText == #"{"status":"ok"}"#)
            #expect(responses[2].header("apns-id") == "00000000-0000-0000-0000-000000000003")
            #expect(responses[2].body.isEmpty)
            #expect(responses[2].header("content-length") == "0")
            #expect(!result.closed, "the connection stays open (keep-alive)")
        }
    }

    /// `Expect: 100-continue` gets `HTTP/1.1 100 Continue` before the body is sent, then the final 200.
    @Test func expectContinueGets100BeforeFinalResponse() async throws {
        try await withServer { server in
            let body = #"{"aps":{"alert":"continue"}}"#
            let (interim, final) = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(
                    "POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: e2e\r\napns-topic: com.example.app\r\n"
                        + "\(server.authorizationHeader)\r\n"
                        + "Content-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
                let interim = socket.readResponses(1, timeout: TestTime.seconds(15))
                try socket.send(body)
                let final = socket.readResponses(1, timeout: TestTime.seconds(15))
                return (interim, final)
            }
            #expect(interim.text == "HTTP/1.1 100 Continue\r\n\r\n", "before the body: \(interim.text)")
            let response = try #require(final.responses.first, "after the body: \(final.text)")
            #expect(response.status == 200)
            #expect(isLowercaseUUID(response.header("apns-id") ?? ""))
        }
    }

    /// A ≥ 1 KiB response is gzip-compressed only for `Accept-Encoding: gzip`, and decompresses to the plain body.
    @Test func largeResponsesAreGzippedOnlyWhenAccepted() async throws {
        try await withServer { server in
            let path = "/nonexistent-" + String(repeating: "x", count: 2000)
            let plainResult = try await exchangeUntilClose(
                port: server.httpPort, "GET \(path) HTTP/1.1\r\nHost: e2e\r\nConnection: close\r\n\r\n")
            let gzipResult = try await exchangeUntilClose(
                port: server.httpPort,
                "GET \(path) HTTP/1.1\r\nHost: e2e\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n")
            let plain = try #require(plainResult.responses.first, "\(plainResult.text.prefix(300))")
            let gzipped = try #require(gzipResult.responses.first, "\(gzipResult.text.prefix(300))")

            #expect(plain.status == 404)
            #expect(plain.header("content-encoding") == nil)
            #expect(plain.body.count >= 1024, "the test needs a body of at least 1 KiB, got \(plain.body.count)")
            #expect(errorCode(plain.body) == "not_found")
            #expect(plain.bodyText.contains(path))

            #expect(gzipped.status == 404)
            #expect(gzipped.header("content-encoding") == "gzip")
            #expect(gzipped.header("vary")?.lowercased().contains("accept-encoding") == true)
            #expect(gzipped.body.starts(with: [0x1F, 0x8B]), "gzip magic")
            #expect(gzipped.body.count < plain.body.count)
            let decompressed = try await run(
                "python3", args: ["-c", "import gzip,sys; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"],
                stdin: Data(gzipped.body))
            #expect(decompressed.status == 0, "\(decompressed)")
            #expect(decompressed.stdout == Data(plain.body))

            // curl agrees: --compressed over HTTP/2 decodes the same JSON.
            let viaCurl = try await curl(["--http2-prior-knowledge", "--compressed", "\(server.httpBase)\(path)"])
            #expect(viaCurl.stdout == Data(plain.body), "\(viaCurl)")
        }
    }

    /// A request whose head never completes gets 408 and a close after `requestTimeoutSeconds`; others are served meanwhile.
    @Test func slowlorisGets408AndIsClosed() async throws {
        try await withServer(configure: { $0.limits.requestTimeoutSeconds = 1 }) { server in
            let outcome = try await offload { () throws -> (other: [Int], pendingAfterOther: Bool, slow: ReadResult, total: Double) in
                // Another client, connected and answered once before the slow one starts.
                let other = try RawSocket(port: server.httpPort)
                let request = "GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n"
                try other.send(request)
                var statuses = other.readResponses(1, timeout: TestTime.seconds(15)).responses.map(\.status)

                // Real time (sockets): timed from before the first byte is sent (the server's timer cannot start
                // earlier; a test thread that runs late cannot make the 408 look early).
                let slow = try RawSocket(port: server.httpPort)
                let started = monotonicSeconds()
                try slow.send("GET / HTTP/1.1\r\nHost: x\r\n")
                // Meanwhile: the other client is served while the slow request dangles.
                try other.send(request)
                statuses += other.readResponses(1, timeout: TestTime.seconds(15)).responses.map(\.status)
                let early = slow.read(timeout: 0.001)
                let pending = early.bytes.isEmpty && !early.closed
                let rest = slow.readUntilClose(timeout: TestTime.timeoutBound(1) + 5)
                let result = ReadResult(bytes: early.bytes + rest.bytes, closed: early.closed || rest.closed,
                                        reset: rest.reset, elapsed: rest.elapsed)
                return (statuses, pending, result, monotonicSeconds() - started)
            }
            #expect(outcome.other == [200, 200], "the other client is served before and during the slow request")
            #expect(outcome.pendingAfterOther, "the other client was answered while the slow request was still pending")
            let response = try #require(outcome.slow.responses.first, "no response: \(outcome.slow.text)")
            #expect(response.status == 408)
            #expect(errorCode(response.body) == "request_timeout", "\(response.bodyText)")
            #expect(outcome.slow.closed, "the slow connection is closed")
            // The upper bound: the timeout plus a loaded machine's slack (below the default 10 s in a plain build).
            #expect(outcome.total > 0.9 && outcome.total < TestTime.timeoutBound(1), "408 after \(outcome.total) s with a 1 s request timeout")
        }
    }

    /// The request timeout counts from a request's first byte: trickling a byte every 200 ms, or
    /// stalling mid-body, still gets 408 and a close after about `requestTimeoutSeconds`.
    @Test(arguments: ["trickled head", "stalled body", "stalled second request"])
    func slowRequestsGet408(_ kind: String) async throws {
        try await withServer(configure: { $0.limits.requestTimeoutSeconds = 1 }) { server in
            let result = try await offload { () throws -> (ReadResult, Double, [Int]) in
                let socket = try RawSocket(port: server.httpPort)
                let started = monotonicSeconds()
                var received: [UInt8] = []
                switch kind {
                case "trickled head":
                    for byte in Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: \(String(repeating: "p", count: 40))\r\n\r\n".utf8) {
                        try socket.send([byte])
                        let partial = socket.read(timeout: 0.2) { !HTTP1Response.parseAll($0).responses.isEmpty }
                        received += partial.bytes
                        if partial.closed || !HTTP1Response.parseAll(received).responses.isEmpty { break }
                    }
                case "stalled body":
                    try socket.send("POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
                default:
                    try socket.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HT")
                }
                let rest = socket.readUntilClose(timeout: TestTime.timeoutBound(1) + 5)
                let all = ReadResult(bytes: received + rest.bytes, closed: rest.closed, reset: rest.reset, elapsed: rest.elapsed)
                return (all, monotonicSeconds() - started, all.responses.map(\.status))
            }
            let (read, seconds, statuses) = result
            #expect(statuses == (kind == "stalled second request" ? [200, 408] : [408]), "\(read.text)")
            #expect(errorCode(read.responses.last?.body ?? []) == "request_timeout")
            #expect(read.closed)
            // Real time (sockets), timed from before the connection: at least the timeout, and at most the timeout
            // plus a loaded machine's slack (below the default 10 s in a plain build).
            #expect(seconds > 0.9 && seconds < TestTime.timeoutBound(1), "408 after \(seconds) s with a 1 s request timeout")
        }
    }

    /// A keep-alive HTTP/1.1 connection with nothing in flight is closed after `idleTimeoutSeconds`.
    @Test func idleKeepAliveConnectionIsClosed() async throws {
        try await withServer(configure: { $0.limits.idleTimeoutSeconds = 1 }) { server in
            // Real time (sockets): timed from before the request (the connection is idle from its answer on, which
            // cannot be earlier; a test thread that reads the answer late cannot make the close look early), at most
            // the timeout plus a loaded machine's slack.
            let (first, rest, elapsed) = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                let started = monotonicSeconds()
                try socket.send("GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n")
                let first = socket.readResponses(1, timeout: TestTime.seconds(15))
                let rest = socket.readUntilClose(timeout: TestTime.timeoutBound(1) + 5)
                return (first, rest, monotonicSeconds() - started)
            }
            #expect(first.responses.first?.status == 200)
            #expect(rest.closed, "closed when idle")
            #expect(rest.bytes.isEmpty)
            #expect(elapsed > 0.9 && elapsed < TestTime.timeoutBound(1), "closed after \(elapsed) s, idle timeout is 1 s")
        }
    }

    /// 40 pipelined requests with distinct answers in one write (more than the 16 queued at once) come back in order.
    @Test func manyPipelinedRequestsKeepTheirOrder() async throws {
        try await withServer { server in
            let count = 40
            let payload = #"{"aps":{"alert":"pipelined"}}"#
            let requests = (0..<count).map { index in
                index % 2 == 0
                    ? "GET /missing-\(index) HTTP/1.1\r\nHost: e2e\r\n\r\n"
                    : "POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: e2e\r\napns-topic: \(testTopic)\r\n"
                        + "\(server.authorizationHeader)\r\n"
                        + "apns-id: 00000000-0000-0000-0000-\(String(format: "%012d", index))\r\n"
                        + "Content-Length: \(payload.utf8.count)\r\n\r\n\(payload)"
            }.joined()
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(requests)
                return socket.readResponses(count, timeout: 10)
            }
            let responses = result.responses
            try #require(responses.count == count, "got \(responses.count) responses")
            for (index, response) in responses.enumerated() {
                if index % 2 == 0 {
                    #expect(response.status == 404)
                    #expect(response.bodyText.contains("/missing-\(index)\""), "response \(index): \(response.bodyText)")
                } else {
                    #expect(response.status == 200, "response \(index): \(response.bodyText)")
                    #expect(response.header("apns-id") == "00000000-0000-0000-0000-\(String(format: "%012d", index))")
                }
            }
        }
    }

    /// HTTP/1.0 without keep-alive gets its answer and a close; HEAD gets headers with content-length and no body.
    @Test func http10ClosesAndHeadHasNoBody() async throws {
        try await withServer { server in
            let old = try await exchangeUntilClose(port: server.httpPort, "GET /healthz HTTP/1.0\r\n\r\n")
            #expect(old.closed)
            #expect(old.responses.first?.status == 200)
            #expect(old.responses.first?.bodyText == #"{"status":"ok"}"#)

            let head = try await exchangeUntilClose(
                port: server.httpPort, "HEAD /healthz HTTP/1.1\r\nHost: e2e\r\nConnection: close\r\n\r\n")
            #expect(head.closed)
            #expect(head.text.hasPrefix("HTTP/1.1 200 "), "\(head.text)")
            #expect(head.text.lowercased().contains("content-length: 15\r\n"), "\(head.text)")
            #expect(head.text.hasSuffix("\r\n\r\n"), "no body after the head: \(head.text)")
        }
    }

    /// Blank lines between requests (accepted before a request line) are not activity: a client that only
    /// sends them is closed at the idle timeout.
    @Test func blankLinesDoNotKeepAnIdleConnectionOpen() async throws {
        try await withServer(configure: { $0.limits.idleTimeoutSeconds = 1 }) { server in
            let (closed, seconds) = try await offload { () -> (Bool, Double) in
                let socket = try RawSocket(port: server.httpPort)
                let start = monotonicSeconds()
                while monotonicSeconds() - start < TestTime.timeoutBound(1) + 5 {
                    try? socket.send("\r\n")
                    let read = socket.read(timeout: 0.3)
                    if read.closed { return (true, monotonicSeconds() - start) }
                }
                return (false, monotonicSeconds() - start)
            }
            #expect(closed, "the connection stayed open for \(seconds) s")
            // Real time (sockets): the idle timeout plus a loaded machine's slack; blank lines every 0.3 s that
            // counted as activity would keep it open past any bound.
            #expect(seconds < TestTime.timeoutBound(1), "\(seconds) s")
        }
    }
}
