// APNs Sandbox — a restart knows every stored device: the provider endpoint's registry is loaded from the store.
import Foundation
import Testing

@Suite struct DeviceRegistryStartTests {
    /// h2load auto-registers 2,500 new tokens (more than one page of the old paged load); one is deleted through the
    /// API. After a restart with unknown tokens refused (strict), pushes to the first, a middle and the last token
    /// are accepted, the deleted token and a new one get 400 BadDeviceToken, and the API lists the same devices.
    @Test func restartLoadsEveryStoredDevice() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = (0..<2500).map { String(format: "%08x", $0) + String(repeating: "c4", count: 28) }
        let deleted = tokens[7]
        let listedBefore = try await withServer(configure: { configuration in
            configuration.dataDirectory = directory
            configuration.apns.streamsBeforeAuthentication = 0
        }) { server in
            let uris = directory + "/uris.txt"
            try tokens.map { "\(server.httpBase)/3/device/\($0)" }.joined(separator: "\n")
                .write(toFile: uris, atomically: true, encoding: .utf8)
            let payload = directory + "/payload.json"
            try #"{"aps":{"alert":"hi"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            // One client: each of h2load's clients walks the list from its start.
            let load = try await run("h2load", args: [
                "-c1", "-m50", "-n\(tokens.count)", "-i", uris, "-d", payload, "-H", "apns-topic: \(testTopic)",
                "-H", server.authorizationHeader,
            ])
            #expect(load.stdoutText.contains("status codes: \(tokens.count) 2xx"), "\(load)")
            #expect(try await apiRequest("DELETE", "\(server.httpBase)/api/v1/devices/\(deleted)").status == 204)
            return try await listedTokens(server)
        }
        let missing = Set(tokens).subtracting(listedBefore)
        #expect(missing == [deleted], "\(missing.count) tokens missing, \(listedBefore.count) listed")

        try await withServer(configure: { configuration in
            configuration.dataDirectory = directory
            configuration.apns.unknownDeviceTokens = .strict
        }) { server in
            var statuses: [String] = []
            for token in [tokens[0], tokens[1250], tokens[2499], deleted, String(repeating: "d5", count: 32)] {
                statuses.append(try await pushStatus(server, token))
            }
            #expect(statuses == ["200", "200", "200", "400 BadDeviceToken", "400 BadDeviceToken"])
            let listed = try await listedTokens(server)
            #expect(listed == listedBefore, "\(listed.count) listed, \(listedBefore.count) before")
        }
    }

    /// The status of one push over h2c, with Apple's reason for a rejection.
    private func pushStatus(_ server: TestServer, _ token: String) async throws -> String {
        let output = try await curl([
            "--http2-prior-knowledge", "-s", "-w", "\n%{http_code}", "-X", "POST", "\(server.httpBase)/3/device/\(token)",
            "-H", server.authorizationHeader, "-H", "apns-topic: \(testTopic)", "-d", #"{"aps":{"alert":"Hi"}}"#,
        ])
        let lines = output.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
        let status = String(lines.last ?? "")
        guard status != "200" else { return status }
        return status + " " + (jsonObject(lines.dropLast().joined(separator: "\n"))?["reason"] as? String ?? "?")
    }

    /// Every device token the API lists, in its order.
    private func listedTokens(_ server: TestServer) async throws -> [String] {
        var tokens: [String] = []
        while true {
            let page = try await apiRequest("GET", "\(server.httpBase)/api/v1/devices?limit=1000&offset=\(tokens.count)")
            let devices = try #require(page.json?["devices"] as? [[String: Any]], "\(page)")
            tokens += devices.compactMap { $0["token"] as? String }
            if devices.count < 1000 { return tokens }
        }
    }
}
