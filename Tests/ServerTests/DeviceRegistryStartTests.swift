// APNs Sandbox — a restart knows every stored device: the provider endpoint's registry is loaded from the store.
import APNsProtocol
import Foundation
@testable import Server
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
            try await pushWithH2load(server, tokens, directory: directory)
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

    /// A restart with more stored devices than the loader's first batch serves before the rest are in. 300 devices
    /// are stored (one app uninstalled, one device deleted); the next start (strict: unknown tokens refused) loads
    /// 100 a batch and is held after the first. Meanwhile a push to a device of a later batch is accepted (it is
    /// looked up, and so in the registry after), the uninstalled app's push gets 410 Unregistered, the deleted token
    /// and a new one 400 BadDeviceToken, the validation route agrees, the API lists every device, and a device
    /// deleted through the API before the loader reaches it stays deleted. Then the load ends with every other
    /// stored device in.
    @Test func pushesWhileTheStoredDevicesLoadAreAnsweredAsAfterIt() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = (0..<300).map { String(format: "%08x", $0) + String(repeating: "b6", count: 28) }
        let stored = try await withServer(configure: { configuration in
            configuration.dataDirectory = directory
        }) { server in
            try await pushWithH2load(server, tokens, directory: directory)
            let listed = try await listedTokens(server)
            #expect(listed.count == 300)
            let (uninstalled, deleted) = (listed[290], listed[280])
            let patch = try await apiRequest("PATCH", "\(server.httpBase)/api/v1/devices/\(uninstalled)",
                                             #"{"uninstallApps":["\#(testTopic)"]}"#)
            #expect(patch.status == 200, "\(patch)")
            #expect(try await apiRequest("DELETE", "\(server.httpBase)/api/v1/devices/\(deleted)").status == 204)
            return listed
        }
        let (late, uninstalled, deleted, deletedMeanwhile) = (stored[250], stored[290], stored[280], stored[270])
        let gate = DispatchSemaphore(value: 0)
        try await withServer(configure: { configuration in
            configuration.dataDirectory = directory
            configuration.apns.unknownDeviceTokens = .strict
        }, beforeStart: { server in
            server.registryLoader.tune { tuning in
                tuning.batchSize = 100
                tuning.beforeBatch = { loaded in if loaded == 100 { gate.wait() } }
            }
        }) { server in
            // Released before the shutdown whatever happens (it waits for the load's thread).
            defer { gate.signal() }
            let registry = server.server.registry
            #expect(registry.isLoading && registry.deviceCount == 100)
            #expect(registry.device(token: DeviceToken(hex: late)!) == nil)
            var statuses: [String] = []
            for token in [stored[0], late, uninstalled, deleted, String(repeating: "d5", count: 32)] {
                statuses.append(try await pushStatus(server, token))
            }
            #expect(statuses == ["200", "200", "410 Unregistered", "400 BadDeviceToken", "400 BadDeviceToken"])
            #expect(registry.device(token: DeviceToken(hex: late)!) != nil, "looked up")
            var verdicts: [String] = []
            for token in [stored[260], stored[261]] {
                if token == stored[261] {
                    let patch = try await apiRequest("PATCH", "\(server.httpBase)/api/v1/devices/\(token)",
                                                     #"{"uninstallApps":["\#(testTopic)"]}"#)
                    #expect(patch.status == 200)
                }
                let body = #"{"deviceToken":"\#(token)","payload":"{\"aps\":{}}","headers":{"apns-topic":"\#(testTopic)"}}"#
                let verdict = try await apiRequest("POST", "\(server.httpBase)/api/v1/pushes/validate", body)
                verdicts.append((verdict.json?["reason"] as? String) ?? "valid")
            }
            #expect(verdicts == ["valid", "Unregistered"])
            #expect(try await apiRequest("DELETE", "\(server.httpBase)/api/v1/devices/\(deletedMeanwhile)").status == 204)
            let listed = try await listedTokens(server)
            #expect(listed.count == 298 && !listed.contains(deletedMeanwhile))
            #expect(registry.isLoading, "still held")

            gate.signal()
            let deadline = Date().addingTimeInterval(30)
            while registry.isLoading && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(!registry.isLoading)
            #expect(registry.deviceCount == 298)
            statuses = []
            for token in [deletedMeanwhile, stored[299], stored[261]] { statuses.append(try await pushStatus(server, token)) }
            #expect(statuses == ["400 BadDeviceToken", "200", "410 Unregistered"])
        }
    }

    /// One push to each token with h2load (auto-registering them), all accepted.
    private func pushWithH2load(_ server: TestServer, _ tokens: [String], directory: String) async throws {
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
