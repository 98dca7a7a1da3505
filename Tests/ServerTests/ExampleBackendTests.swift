// APNs Sandbox — Examples/backend/send.py (aioapns with its default host and port) against a local sandbox.
import Foundation
import Testing

/// The compose file's example backend, run outside Docker: the same send.py, unchanged, with only the sandbox CA
/// trusted (SSL_CERT_FILE) and Apple's names resolved to the local sandbox (Tests/Python/example_backend.py does
/// what the compose network's aliases do). Its push is displayed on the device.
@Suite struct ExampleBackendTests {
    @Test func exampleBackendPushesWithAioapnsDefaults() async throws {
        try await withServer { server in
            let device = String(repeating: "be", count: 32)
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/example_backend.py", "--port", String(server.tlsPort),
            ], timeout: 30, environment: ProcessInfo.processInfo.environment.merging([
                "SSL_CERT_FILE": server.caPath, "APNS_KEY_FILE": server.dataDirectory + "/AuthKey_\(testKeyID).p8",
                "APNS_KEY_ID": testKeyID, "APNS_TEAM_ID": testTeamID, "APNS_TOPIC": testTopic,
                "DEVICE_TOKEN": device, "ALERT": "From the example backend",
            ]) { _, new in new })
            #expect(output.status == 0, "\(output)")
            #expect(output.stderrText.contains("resolved api.development.push.apple.com:443"), "\(output)")
            let line = try #require(output.stdoutText.split(separator: "\n").last.map(String.init), "\(output)")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(answer["status"] as? String == "200", "\(answer)")
            let apnsID = try #require(answer["apnsId"] as? String)
            let (status, record) = try await apiRequest("GET", "\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
            #expect(status == 200 && record?["status"] as? String == "displayed", "\(record ?? [:])")
            #expect(record?["deviceToken"] as? String == device)
            #expect((record?["displayed"] as? [String: Any])?["body"] as? String == "From the example backend")
        }
    }
}
