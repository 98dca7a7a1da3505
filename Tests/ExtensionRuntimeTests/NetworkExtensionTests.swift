// APNs Sandbox — attach-media downloads and webhook extensions against a local HTTP server.
import APNsProtocol
import Foundation
import Sandbox
import Testing

@testable import ExtensionRuntime

/// A server with the routes these tests need.
private func makeServer() throws -> LocalHTTPServer {
    try LocalHTTPServer { request in
        switch request.path {
        case "/image.png": LocalHTTPServer.Response(contentType: "image/png", body: Fixtures.png)
        case "/slow.png": LocalHTTPServer.Response(contentType: "image/png", body: Fixtures.png, delayMilliseconds: 1500)
        case "/page.png": LocalHTTPServer.Response(contentType: "image/png", body: Array("<html>not an image</html>".utf8))
        case "/huge.png": LocalHTTPServer.Response(contentType: "image/png", body: Fixtures.png + [UInt8](repeating: 0, count: 11 << 20))
        case "/hook":
            .json(#"{"title":"Hooked","body":"from the webhook","userInfo":{"hooked":true}}"#)
        case "/hook-message":
            .json(#"{"type":"content","content":{"title":"Wrapped"}}"#)
        case "/hook-late":
            .json(#"{"title":"Late"}"#, delay: 450)
        case "/hook-slow":
            .json(#"{"title":"Too late"}"#, delay: 3000)
        case "/hook-slower":
            .json(#"{"title":"Far too late"}"#, delay: 20_000)
        case "/hook-error":
            .json(#"{"error":"boom"}"#, status: 500)
        default:
            LocalHTTPServer.Response(status: 404, contentType: "text/plain", body: Array("not found".utf8))
        }
    }
}

@Suite(.serialized) struct AttachMediaTests {
    static func push(_ url: String, timeoutMs: Int = 2000, budgetMs: Int = 5000) -> TestPush {
        var push = TestPush(#"{"kind":"builtin","budgetMs":\#(budgetMs),"graceMs":300,"steps":[{"step":"attach-media","timeoutMs":\#(timeoutMs)},{"step":"rewrite","title":"done"}]}"#)
        push.payload = #"{"aps":{"alert":{"title":"Pic","body":"b"},"mutable-content":1},"media-url":"\#(url)"}"#
        return push
    }

    /// A PNG from the server is attached and stored under the notification's folder.
    @Test func downloadsAndAttachesAnImage() throws {
        let server = try makeServer()
        let harness = try RuntimeHarness()
        let push = Self.push(server.url("/image.png"))
        let result = try harness.result(push)
        #expect(result.outcome == .processed)
        #expect(result.content.title == "done")
        #expect(result.content.attachments == [Attachment(identifier: "media", type: "image/png", size: Fixtures.png.count,
                                                         path: push.apnsID + "/" + push.token + "/media.png")])
        let stored = try Data(contentsOf: URL(
            fileURLWithPath: harness.attachmentsRoot + "/" + push.apnsID + "/" + push.token + "/media.png"))
        #expect(Array(stored) == Fixtures.png)
        #expect(result.has(.attachmentAccepted, containing: "image/png"))
    }

    /// A relative data directory (the README's `./data`) still stores the attachment.
    @Test func relativeDataDirectoryStillAttaches() throws {
        let server = try makeServer()
        let absolute = try TemporaryDirectory()
        // The same directory, relative to the working directory.
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        let relative = "./" + String(repeating: "../", count: depth) + absolute.path.drop { $0 == "/" }
        let harness = try RuntimeHarness { $0.dataDirectory = relative }
        let push = Self.push(server.url("/image.png"))
        let result = try harness.result(push)
        #expect(result.outcome == .processed)
        #expect(result.content.attachments.count == 1, "\(result.timeline)")
        #expect(FileManager.default.fileExists(
            atPath: absolute.path + "/attachments/" + push.apnsID + "/" + push.token + "/media.png"))
    }

    /// 404, a wrong type, an oversize image, a refused connection: the step fails and the rest goes on.
    @Test func failedDownloadsContinueWithoutMedia() throws {
        let server = try makeServer()
        let harness = try RuntimeHarness()
        let cases = [("/missing.png", "HTTP 404"), ("/page.png", "not a supported media type"),
                     ("/huge.png", "over the image limit")]
        for (path, reason) in cases {
            let result = try harness.result(Self.push(server.url(path)))
            #expect(result.outcome == .processed, "\(path)")
            #expect(result.content.title == "done")
            #expect(result.content.attachments.isEmpty)
            #expect(result.has(.stepFailed, containing: reason), "\(path): \(result.timeline)")
        }
        let refused = try harness.result(Self.push("http://127.0.0.1:1/x.png"))
        #expect(refused.outcome == .processed && refused.content.attachments.isEmpty)
        #expect(refused.has(.stepFailed, containing: "attach-media"))
    }

    /// A download slower than the step's timeout is abandoned; the notification goes on without media.
    @Test func slowDownloadTimesOut() throws {
        let server = try makeServer()
        let harness = try RuntimeHarness()
        let run = harness.run(Self.push(server.url("/slow.png"), timeoutMs: 200))
        let result = try run.wait()
        #expect(result.outcome == .processed)
        #expect(result.content.attachments.isEmpty)
        #expect(result.has(.stepFailed, containing: "timed out after 200 ms"))
        // Real time (the download's own timeout): before the server's answer at 1.5 s, not within 1 s, which a
        // loaded machine running the suite need not give.
        #expect(run.elapsedMilliseconds < 1500)
    }

    /// A download slower than the budget: timeWillExpire hands over the best attempt, without media. The budget
    /// is sandbox time (a manual clock): it ends when the clock is moved, once the request is at the server (which
    /// answers 1.5 s later), where a real 300 ms budget and a 1 s bound raced a loaded machine.
    @Test func downloadSlowerThanTheBudgetIsBestAttemptWithoutMedia() throws {
        let server = try makeServer()
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let start = clock.nowMilliseconds
        let run = harness.run(Self.push(server.url("/slow.png"), timeoutMs: 10_000, budgetMs: 300))
        #expect(waitUntil(seconds: 30) { server.received.count == 1 })
        clock.advance(byMilliseconds: 299)
        #expect(run.result == nil)
        clock.advance(byMilliseconds: 1)
        let result = try run.wait()
        #expect(result.outcome == .bestAttempt)
        #expect(result.content.title == "Pic" && result.content.attachments.isEmpty)
        #expect(result.entries(.timeWillExpire).first?.at == start + 300)
    }
}

@Suite(.serialized) struct WebhookExtensionTests {
    static func push(_ url: String, budgetMs: Int = 2000, graceMs: Int = 300, timeoutMs: Int? = nil) -> TestPush {
        let timeout = timeoutMs.map { #","timeoutMs":\#($0)"# } ?? ""
        return TestPush(#"{"kind":"webhook","url":"\#(url)","budgetMs":\#(budgetMs),"graceMs":\#(graceMs)\#(timeout)}"#)
    }

    /// The request is POSTed as the exec `request` message; a 200 body is the content.
    @Test func responseBodyIsTheContent() throws {
        let server = try makeServer()
        let harness = try RuntimeHarness()
        let push = Self.push(server.url("/hook"))
        let result = try harness.result(push)
        #expect(result.outcome == .processed, "\(result.timeline)")
        #expect(result.content.title == "Hooked" && result.content.body == "from the webhook")
        #expect(result.content.userInfoJSON == #"{"hooked":true}"#)
        let request = try #require(server.received.first)
        #expect(request.method == "POST" && request.headers["content-type"] == "application/json")
        let body = try JSON.parse(request.body)
        #expect(body["type"]?.string == "request" && body["apnsId"]?.string == push.apnsID)
        #expect(body["content"]?["title"]?.string == "Secret")
        let wrapped = try harness.result(Self.push(server.url("/hook-message")))
        #expect(wrapped.content.title == "Wrapped")
    }

    /// An answer within the grace is a best attempt; none by budget + grace is a timeout; HTTP errors are errors.
    /// Budget and grace are sandbox time (a manual clock), moved once the request is at the server, which answers
    /// 3 s later (real time; the request's own timeout is budget + grace + 1 s of real time, so the grace is 5 s):
    /// a real clock raced a 450 ms answer against a 300 ms budget and 500 ms of grace, and bounded a timeout at 900 ms.
    @Test func timingAndErrors() throws {
        let server = try makeServer()
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let late = harness.run(Self.push(server.url("/hook-slow"), budgetMs: 300, graceMs: 5000))
        #expect(waitUntil(seconds: 30) { server.received.count == 1 })
        clock.advance(byMilliseconds: 300)
        let lateResult = try late.wait()
        #expect(lateResult.outcome == .bestAttempt, "\(lateResult.timeline)")
        #expect(lateResult.content.title == "Too late")
        // The timeout: an answer 20 s later (real time) than the request, which itself gives up after budget + grace
        // + 1 s (11.3 s real): the advances below have that long, not the 3 s of /hook-slow, to come first.
        let start = clock.nowMilliseconds
        let slow = harness.run(Self.push(server.url("/hook-slower"), budgetMs: 300, graceMs: 10_000))
        #expect(waitUntil(seconds: 30) { server.received.count == 2 })
        clock.advance(byMilliseconds: 300)
        #expect(waitUntil { clock.pendingTaskCount == 1 })  // the grace timer
        clock.advance(byMilliseconds: 9999)
        #expect(slow.result == nil)
        clock.advance(byMilliseconds: 1)
        let timedOut = try slow.wait()
        #expect(timedOut.outcome == .originalTimeout, "\(timedOut.timeline)")
        #expect(timedOut.entries(.timeWillExpire).first?.at == start + 300)
        let error = try harness.result(Self.push(server.url("/hook-error")))
        #expect(error.outcome == .originalError)
        #expect(error.has(.error, containing: "HTTP 500"))
        let ownTimeout = try harness.result(Self.push(server.url("/hook-slow"), budgetMs: 5000, timeoutMs: 200))
        #expect(ownTimeout.outcome == .originalError)
    }
}
