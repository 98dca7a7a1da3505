// APNs Sandbox — the outbound HTTP client against the sandbox's own HTTP stack on loopback.
import Foundation
import HTTPClient
import Synchronization
import TestProcessSupport
import Testing
import Support

/// Sends `request` and waits for its completion.
func send(_ client: HTTPClient, _ request: HTTPClient.Request) async -> Result<HTTPClient.Response, HTTPClient.Failure> {
    await withCheckedContinuation { continuation in
        client.send(request) { continuation.resume(returning: $0) }
    }
}

private func text(_ result: Result<HTTPClient.Response, HTTPClient.Failure>) -> String {
    (try? result.get()).map { String(decoding: $0.body, as: UTF8.self) } ?? "\(result)"
}

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTPClientTests {
    /// A GET's body comes back in memory; a POST carries its method, headers and body, without `Expect`.
    @Test func getsAndPosts() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let got = try await send(client, HTTPClient.Request(url: server.url("/small"), timeoutMilliseconds: 5000)).get()
        #expect(got.status == 200 && got.body == LoopbackServer.small && got.byteCount == 64)
        let body = [UInt8](repeating: 7, count: 4000)
        let posted = await send(client, HTTPClient.Request(
            url: server.url("/inspect"), method: "POST", headers: [("x-test", "one"), ("content-type", "application/json")],
            body: body, timeoutMilliseconds: 5000))
        let lines = text(posted).split(separator: "\n")
        #expect(lines.contains("method=POST") && lines.contains("body=4000") && lines.contains("x-test=one"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("expect=") })
        let echoed = try await send(client, HTTPClient.Request(
            url: server.url("/echo"), method: "POST", body: body, timeoutMilliseconds: 5000)).get()
        #expect(echoed.body == body)
        let missing = try await send(client, HTTPClient.Request(url: server.url("/status/404"), timeoutMilliseconds: 5000)).get()
        #expect(missing.status == 404)
        // A space (a media URL as a payload may carry it) is sent percent-encoded, as URLSession did.
        let spaced = try await send(client, HTTPClient.Request(url: server.url("/bytes/3?note=a b"), timeoutMilliseconds: 5000)).get()
        #expect(spaced.status == 200 && spaced.body == Array("abc".utf8))
    }

    /// Refused redirects are the answer; followed ones end at the target, within the limit; a POST
    /// answered 303 continues as a GET.
    @Test func redirectPolicy() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let refused = try await send(client, HTTPClient.Request(url: server.url("/redirect/3"), timeoutMilliseconds: 5000)).get()
        #expect(refused.status == 302)
        let followed = try await send(client, HTTPClient.Request(
            url: server.url("/redirect/3"), timeoutMilliseconds: 5000, redirects: .follow(limit: 4))).get()
        #expect(followed.status == 200 && followed.body == LoopbackServer.small)
        let tooMany = await send(client, HTTPClient.Request(
            url: server.url("/redirect/3"), timeoutMilliseconds: 5000, redirects: .follow(limit: 2)))
        guard case .failure(.transport(let message)) = tooMany else {
            Issue.record("expected too many redirects, got \(tooMany)")
            return
        }
        #expect(message.lowercased().contains("redirect"), "\(message)")
        let seeOther = await send(client, HTTPClient.Request(
            url: server.url("/see-other"), method: "POST", body: [1, 2, 3], timeoutMilliseconds: 5000,
            redirects: .follow(limit: 4)))
        #expect(text(seeOther).split(separator: "\n").contains("method=GET"), "\(text(seeOther))")
    }

    /// A body over the limit fails the request; bodies go to a file or nowhere when asked.
    @Test func sizeLimitsAndDestinations() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let tooLarge = await send(client, HTTPClient.Request(
            url: server.url("/bytes/100000"), timeoutMilliseconds: 5000, maxResponseBytes: 1000))
        #expect(tooLarge == .failure(.tooLarge(limit: 1000)))
        let exact = try await send(client, HTTPClient.Request(
            url: server.url("/bytes/1000"), timeoutMilliseconds: 5000, maxResponseBytes: 1000)).get()
        #expect(exact.byteCount == 1000)

        let path = NSTemporaryDirectory() + "http-client-" + UUID().uuidString
        defer { unlink(path) }
        let saved = try await send(client, HTTPClient.Request(
            url: server.url("/bytes/5000"), timeoutMilliseconds: 5000, destination: .file(path))).get()
        #expect(saved.body.isEmpty && saved.byteCount == 5000)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 5000)
        let unwritable = await send(client, HTTPClient.Request(
            url: server.url("/small"), timeoutMilliseconds: 5000, destination: .file("/nonexistent/dir/file")))
        guard case .failure(.file(let problem)) = unwritable else {
            Issue.record("expected a file failure, got \(unwritable)")
            return
        }
        #expect(problem.hasPrefix("open /nonexistent/dir/file: "))
        let discarded = try await send(client, HTTPClient.Request(
            url: server.url("/bytes/5000"), timeoutMilliseconds: 5000, destination: .discard)).get()
        #expect(discarded.body.isEmpty && discarded.byteCount == 5000)
    }

    /// `onChunk` sees every body byte as it arrives, in order, whatever the destination.
    @Test func chunksReachOnChunk() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let seen = Locked<[UInt8]>([])
        var request = HTTPClient.Request(url: server.url("/bytes/50000"), timeoutMilliseconds: 5000, destination: .discard)
        request.onChunk = { chunk in seen.withLock { $0 += chunk } }
        let answer = try await send(client, request).get()
        #expect(answer.byteCount == 50000 && answer.body.isEmpty)
        let expected = try await send(client, HTTPClient.Request(url: server.url("/bytes/50000"), timeoutMilliseconds: 5000)).get()
        #expect(seen.withLock { $0 } == expected.body)
    }

    /// Decoding asks for compressed bodies and hands back the decoded bytes.
    @Test func decodesCompressedBodies() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let asked = text(await send(client, HTTPClient.Request(
            url: server.url("/inspect"), timeoutMilliseconds: 5000, decodesContent: true)))
        #expect(asked.split(separator: "\n").contains { $0.hasPrefix("accept-encoding=") && $0.contains("gzip") }, "\(asked)")
        let decoded = try await send(client, HTTPClient.Request(
            url: server.url("/bytes/5000"), timeoutMilliseconds: 5000, decodesContent: true)).get()
        #expect(decoded.byteCount == 5000 && decoded.body == (0..<5000).map { UInt8(ascii: "a") + UInt8($0 % 26) })
    }

    /// No answer within the timeout, nobody listening, a bad URL: failures, and soon.
    @Test func timeoutsRefusalsAndBadURLs() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        // A timeout, not the answer the server gives after 5 s. No bound on the elapsed time: the whole suite
        // in parallel on two cores has starved this for over 30 s.
        let slow = await send(client, HTTPClient.Request(url: server.url("/slow/5000"), timeoutMilliseconds: 200))
        guard case .failure(.transport(let message)) = slow else {
            Issue.record("expected a timeout, got \(slow)")
            return
        }
        #expect(message.lowercased().contains("timeout") || message.lowercased().contains("timed out"), "\(message)")
        let refused = await send(client, HTTPClient.Request(url: "http://127.0.0.1:1/", timeoutMilliseconds: 5000))
        if case .success = refused { Issue.record("nothing listens on port 1") }
        for url in ["ftp://127.0.0.1/x", "not a url", "http:///nohost"] {
            #expect(await send(client, HTTPClient.Request(url: url, timeoutMilliseconds: 100)) == .failure(.invalidURL(url)))
        }
    }

    /// A cancelled request completes once, as cancelled; a cancel after the answer changes nothing.
    @Test func cancellation() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let calls = Locked(0)
        // Cancelled, not answered (after 30 s, far beyond any stall of a busy machine); no bound on the elapsed time.
        let result: Result<HTTPClient.Response, HTTPClient.Failure> = await withCheckedContinuation { continuation in
            let handle = client.send(HTTPClient.Request(url: server.url("/slow/30000"), timeoutMilliseconds: 60_000)) {
                calls.withLock { $0 += 1 }
                continuation.resume(returning: $0)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { handle.cancel() }
        }
        #expect(result == .failure(.cancelled))
        let handle = Locked<HTTPClient.Handle?>(nil)
        let answered: Result<HTTPClient.Response, HTTPClient.Failure> = await withCheckedContinuation { continuation in
            let made = client.send(HTTPClient.Request(url: server.url("/small"), timeoutMilliseconds: 5000)) {
                calls.withLock { $0 += 1 }
                continuation.resume(returning: $0)
            }
            // Set before this closure returns, so before the await below resumes.
            handle.withLock { $0 = made }
        }
        handle.withLock { $0 }?.cancel()
        #expect((try? answered.get())?.status == 200)
        try await Task.sleep(for: .milliseconds(100))
        #expect(calls.withLock { $0 } == 2)
    }

    /// Shutdown fails what is in flight and everything after.
    @Test func shutdownFailsInFlightAndLater() async throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        let inFlight: Result<HTTPClient.Response, HTTPClient.Failure> = await withCheckedContinuation { continuation in
            client.send(HTTPClient.Request(url: server.url("/slow/30000"), timeoutMilliseconds: 60_000)) {
                continuation.resume(returning: $0)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { client.shutdown() }
        }
        #expect(inFlight == .failure(.shutDown))
        #expect(await send(client, HTTPClient.Request(url: server.url("/small"), timeoutMilliseconds: 100)) == .failure(.shutDown))
        // A client that never sent anything has no thread to stop.
        HTTPClient().shutdown()
    }

    /// `https://` to a server whose CA is not the system's fails, unless the client is given that CA.
    @Test func tlsWithCustomCA() async throws {
        let server = try LoopbackServer(tls: true)
        let system = HTTPClient()
        defer { system.shutdown() }
        let untrusted = await send(system, HTTPClient.Request(url: server.tlsURL("/small"), timeoutMilliseconds: 5000))
        guard case .failure(.transport(let message)) = untrusted else {
            Issue.record("a certificate from an unknown CA must be refused, got \(untrusted)")
            return
        }
        #expect(message.lowercased().contains("certificate") || message.lowercased().contains("ssl"), "\(message)")
        let custom = HTTPClient(configuration: HTTPClient.Configuration(caFile: server.caFile))
        defer { custom.shutdown() }
        let trusted = try await send(custom, HTTPClient.Request(url: server.tlsURL("/small"), timeoutMilliseconds: 5000)).get()
        #expect(trusted.status == 200 && trusted.body == LoopbackServer.small)
    }
}
