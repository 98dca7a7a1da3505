// APNs Sandbox — `/api/v1/provider-tokens`: minted tokens push over h2c and HTTP/1.1, are re-used, renewed by sandbox time.
import Foundation
@testable import Server
import Testing

@Suite struct ProviderTokenRouteTests {
    private func mint(_ server: TestServer, _ body: String? = nil) async throws -> (status: Int, json: [String: Any]?) {
        try await apiRequest("POST", "\(server.httpBase)/api/v1/provider-tokens", body)
    }

    /// Pushes with `token` over h2c (`--http2-prior-knowledge`) or HTTP/1.1; the status code.
    private func push(_ server: TestServer, token: String, http2: Bool) async throws -> String {
        let output = try await curl([
            http2 ? "--http2-prior-knowledge" : "--http1.1", "-o", "/dev/null", "-w", "%{http_code}",
            "-X", "POST", "\(server.httpBase)/3/device/\(deviceToken)",
            "-H", "authorization: bearer \(token)", "-H", "apns-topic: \(testTopic)", "-d", #"{"aps":{"alert":"Hi"}}"#,
        ])
        return output.stdoutText
    }

    @Test func mintedTokenPushesOverBothProtocolsAndIsReused() async throws {
        try await withServer { server in
            let (status, json) = try await mint(server)
            #expect(status == 200, "\(json ?? [:])")
            let token = try #require(json?["token"] as? String)
            #expect(json?["keyId"] as? String == testKeyID && json?["teamId"] as? String == testTeamID)
            let issuedAt = try #require(json?["issuedAt"] as? Int)
            #expect(json?["expiresAt"] as? Int == issuedAt + 3600 && json?["renewAfter"] as? Int == issuedAt + 2400)
            #expect(try await push(server, token: token, http2: true) == "200")
            #expect(try await push(server, token: token, http2: false) == "200")
            let again = try await mint(server, #"{"keyId":"\#(testKeyID)","teamId":"\#(testTeamID)"}"#)
            #expect(again.json?["token"] as? String == token, "the same token while it is young")
            #expect(!server.logSink.capturedLines.joined().contains(token), "the token is never logged")
        }
    }

    @Test func aNewTokenAfterFortyOneMinutesOfVirtualTime() async throws {
        try await withServer(configure: { $0.clock = ClockSettings(virtual: true, frozen: true) }) { server in
            let first = try #require(try await mint(server).json?["token"] as? String)
            #expect(try await push(server, token: first, http2: true) == "200")
            let advanced = try await apiRequest("POST", "\(server.httpBase)/api/v1/clock/advance", #"{"seconds":2460}"#)
            #expect(advanced.status == 200)
            let (status, json) = try await mint(server)
            let second = try #require(json?["token"] as? String)
            #expect(status == 200 && second != first)
            #expect(try await push(server, token: second, http2: true) == "200", "valid under the virtual clock")
        }
    }

    @Test func bareJWTForAShellPipeline() async throws {
        try await withServer { server in
            let script = """
            TOKEN=$(curl -sf -X POST -H 'accept: application/jwt' \(server.httpBase)/api/v1/provider-tokens) || exit 9
            curl -s --http2-prior-knowledge -o /dev/null -w '%{http_code}' -H "authorization: bearer $TOKEN" \
              -H 'apns-topic: \(testTopic)' -d '{"aps":{"alert":"Hi"}}' \(server.httpBase)/3/device/\(deviceToken)
            """
            let output = try await run("/bin/sh", args: ["-c", script])
            #expect(output.stdoutText == "200", "\(output.stdoutText) \(output.stderrText)")
            let head = try await curl(["-i", "-X", "POST", "-H", "accept: application/jwt", "\(server.httpBase)/api/v1/provider-tokens"])
            #expect(head.stdoutText.lowercased().contains("content-type: application/jwt"))
        }
    }

    @Test func unknownKeysAndFieldsAreErrorsAndKeysAreListed() async throws {
        try await withServer { server in
            let unknown = try await mint(server, #"{"keyId":"NOSUCHKEY1"}"#)
            #expect(unknown.status == 404 && (unknown.json?["error"] as? [String: Any])?["code"] as? String == "key_not_found", "\(unknown.json ?? [:])")
            let field = try await mint(server, #"{"kid":"x"}"#)
            #expect(field.status == 400 && "\(field.json ?? [:])".contains("kid"), "\(field.json ?? [:])")
            let (status, json) = try await apiRequest("GET", "\(server.httpBase)/api/v1/provider-tokens")
            let keys = json?["keys"] as? [[String: Any]] ?? []
            #expect(status == 200 && keys.count == 1 && keys.first?["canSign"] as? Bool == true, "\(json ?? [:])")
        }
    }
}
