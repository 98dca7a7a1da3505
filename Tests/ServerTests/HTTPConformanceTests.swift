// APNs Sandbox — end to end: HTTP details the hostile-peer review found (issue #11, item 9).
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct HTTPConformanceTests {
    /// A 409 says `Conflict` in its HTTP/1.1 status line (it said `Unknown`).
    @Test func conflictHasItsReasonPhrase() async throws {
        try await withServer { server in
            let body = #"{"token":"\#(String(repeating: "cd", count: 32))","apps":["\#(testTopic)"]}"#
            let request = "POST /api/v1/devices HTTP/1.1\r\nHost: e2e\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(request + request)
                return socket.readResponses(2, timeout: 5)
            }
            try #require(result.responses.count == 2, "\(result.text)")
            #expect(result.responses[1].status == 409)
            #expect(result.text.contains("HTTP/1.1 409 Conflict\r\n"), "\(result.text)")
        }
    }

    /// An absolute-form target (`POST http://localhost/3/device/…`, RFC 9112 §3.2.2) is a push like its
    /// origin form; its authority wins over `Host` (here Apple's production host, whose pushes would get
    /// no `apns-unique-id`): the development push is accepted with one.
    @Test func absoluteFormTargetIsServed() async throws {
        try await withServer { server in
            let body = #"{"aps":{"alert":"absolute"}}"#
            let request = "POST http://localhost:\(server.httpPort)/3/device/\(deviceToken) HTTP/1.1\r\n"
                + "Host: api.push.apple.com\r\napns-topic: \(testTopic)\r\n\(server.authorizationHeader)\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(request)
                return socket.readResponses(1, timeout: 5)
            }
            let response = try #require(result.responses.first, "\(result.text)")
            #expect(response.status == 200, "\(result.text)")
            #expect(response.header("apns-id").map(isLowercaseUUID) == true, "\(result.text)")
            #expect(response.header("apns-unique-id") != nil, "development, from the target's authority: \(result.text)")
        }
    }

    /// A push whose header section is over the limit is answered in APNs' shape on both protocols:
    /// `413 {"reason":"PayloadTooLarge"}` with the request's `apns-id` (not the sandbox's `{"error":…}`).
    @Test func oversizedHeadersOnThePushEndpointGetAPNsShape() async throws {
        try await withServer { server in
            let apnsID = "4f1a8c2e-8f5b-4a47-9a44-1f0d6b1c2a3d"
            let big = String(repeating: "a", count: 20_000)
            // HTTP/1.1: over maxHeaderBytes (16 KiB).
            let request = "POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: e2e\r\napns-id: \(apnsID)\r\n"
                + "X-Big: \(big)\r\nContent-Length: 2\r\n\r\n{}"
            let result = try await exchangeUntilClose(port: server.httpPort, request)
            let h1 = try #require(result.responses.first, "\(result.text)")
            #expect(h1.status == 413, "\(result.text)")
            #expect(jsonObject(h1.body)?["reason"] as? String == "PayloadTooLarge", "\(result.text)")
            #expect(h1.header("apns-id") == apnsID, "\(result.text)")

            // HTTP/2: over SETTINGS_MAX_HEADER_LIST_SIZE (8000).
            let output = try await curl([
                "--http2-prior-knowledge", "-D", "-", "-X", "POST", "-H", "apns-id: \(apnsID)", "-H", "x-big: \(big)",
                "-H", "apns-topic: \(testTopic)", "-d", "{}", "\(server.httpBase)/3/device/\(deviceToken)",
            ])
            let h2 = try #require(CurlResponse(output.stdout), "\(output)")
            #expect(h2.status == 413, "\(output)")
            #expect(jsonObject(Array(h2.body))?["reason"] as? String == "PayloadTooLarge", "\(h2.bodyText)")
            #expect(h2.header("apns-id") == apnsID, "\(output)")
        }
    }
}
