// APNs Sandbox — the PyAPNs2 family (`apns2-up` on PyPI), whose tokens carry a fractional `iat`.
import Foundation
import Testing

@Suite struct PyAPNs2ClientTests {
    /// Token pushes over TLS from the real library: a valid push succeeds (its JWT says
    /// `"iat": time.time()`, which Apple accepts), an unknown token in strict mode is BadDeviceToken, an
    /// uninstalled app is Unregistered with the uninstall time.
    @Test func tokenPushesWithAFractionalIssueTime() async throws {
        try await withServer(configure: { $0.apns.unknownDeviceTokens = .strict }) { server in
            let known = String(repeating: "a1", count: 32)
            let gone = String(repeating: "b2", count: 32)
            for token in [known, gone] {
                let created = try await apiRequest(
                    "POST", server.httpBase + "/api/v1/devices", #"{"token":"\#(token)","apps":["\#(testTopic)"]}"#)
                #expect(created.status == 201)
            }
            let uninstalled = try await apiRequest(
                "PATCH", server.httpBase + "/api/v1/devices/\(gone)", #"{"uninstallApps":["\#(testTopic)"]}"#)
            #expect(uninstalled.status == 200)
            let unknown = String(repeating: "c3", count: 32)
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/apns2_client.py", "--port", "\(server.tlsPort)",
                "--ca", server.caPath, "--key", server.dataDirectory + "/AuthKey_\(testKeyID).p8", "--key-id", testKeyID,
                "--team-id", testTeamID, "--topic", testTopic, "--device", known, "--device", unknown, "--device", gone,
            ], timeout: 40)
            try #require(output.status == 0, "\(output)")
            let results = output.stdoutText.split(separator: "\n").compactMap { jsonObject(String($0)) }
            #expect(results.map { $0["result"] as? String } == ["Success", "BadDeviceToken", "Unregistered"], "\(output)")
            #expect((results.last?["timestamp"] as? Int ?? 0) > 1_700_000_000_000, "\(results)")
            // The token really had a fraction: the record keeps its issue time in whole seconds.
            let listed = try await apiRequest("GET", server.httpBase + "/api/v1/notifications?device=\(known)")
            #expect(listed.json?["total"] as? Int == 1)
        }
    }
}
