// APNs Sandbox — the real `aioapns` client (PyPI) against the sandbox over TLS.
import Foundation
import Testing

@Suite struct AioapnsClientTests {
    /// Runs Tests/Python/aioapns_client.py and decodes its one-line JSON report.
    private func send(_ server: TestServer, _ arguments: [String]) async throws -> (report: [String: Any], output: ProcessOutput) {
        let output = try await run("/usr/bin/env", args: [
            "python3", TestPaths.packageRoot + "/Tests/Python/aioapns_client.py",
            "--port", String(server.tlsPort), "--cafile", server.caPath, "--server-name", "localhost",
            "--key-file", server.dataDirectory + "/AuthKey_\(testKeyID).p8", "--key-id", testKeyID,
            "--team-id", testTeamID, "--topic", testTopic, "--timeout", "25",
        ] + arguments, timeout: 40)
        let line = output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
        let report = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        return (report, output)
    }

    private func results(_ report: [String: Any]) -> [String: Int] {
        (report["results"] as? [String: Any])?.compactMapValues { $0 as? Int } ?? [:]
    }

    /// Hundreds of concurrent pushes with a valid provider token all get 200 and their apns-id back
    /// (aioapns offers no ALPN). aioapns opens streams before it reads the server's SETTINGS, so with
    /// APNs' one stream before authentication the extra ones are refused and aioapns waits for its own
    /// timeout; this test starts with the full limit (`streamsBeforeAuthentication = 0`).
    @Test func concurrentPushesSucceed() async throws {
        try await withServer(configure: { $0.apns.streamsBeforeAuthentication = 0 }) { server in
            let (report, output) = try await send(server, [
                "--count", "300", "--concurrency", "100", "--random-tokens", "--expect-status", "200",
            ])
            #expect(output.status == 0, "aioapns run failed: \(output)")
            #expect(results(report) == ["200": 300])
            #expect(report["apns_ids_echoed"] as? Bool == true)
            #expect(server.server.pushes.counts.accepted == 300)
        }
    }

    /// With APNs' rule of one stream until a valid token, pushes one at a time all succeed.
    @Test func sequentialPushesSucceedWithOneStreamBeforeAuthentication() async throws {
        try await withServer(configure: { $0.apns.streamsBeforeAuthentication = 1 }) { server in
            let (report, output) = try await send(server, [
                "--count", "20", "--concurrency", "1", "--random-tokens", "--expect-status", "200",
            ])
            #expect(output.status == 0, "aioapns run failed: \(output)")
            #expect(results(report) == ["200": 20])
        }
    }

    /// A token signed with a key the sandbox does not know gets 403 InvalidProviderToken.
    @Test func wrongKeyIsInvalidProviderToken() async throws {
        try await withServer { server in
            let (report, output) = try await send(server, [
                "--count", "5", "--concurrency", "5", "--wrong-key", "--random-tokens", "--expect-status", "403:InvalidProviderToken",
            ])
            #expect(output.status == 0, "aioapns run failed: \(output)")
            #expect(results(report) == ["403:InvalidProviderToken": 5])
        }
    }

    /// Strict device tokens: unknown tokens get BadDeviceToken; an uninstalled app gets 410 Unregistered.
    @Test func deviceRulesAreReported() async throws {
        try await withServer(configure: { $0.apns.unknownDeviceTokens = .strict }) { server in
            let (report, output) = try await send(server, [
                "--count", "5", "--concurrency", "5", "--random-tokens", "--expect-status", "400:BadDeviceToken",
            ])
            #expect(output.status == 0, "aioapns run failed: \(output)")
            #expect(results(report) == ["400:BadDeviceToken": 5])
        }
    }
}
