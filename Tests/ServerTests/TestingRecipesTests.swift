// APNs Sandbox — docs/testing.md's recipes, run as a backend's suite would run them (pytest), and faults and the
// clock in resets and snapshots.
import Foundation
@testable import Server
import Testing

@Suite struct TestingRecipesTests {
    /// Examples/testing/pytest: reset in every test, 410 cleanup, retry through an outage, expiry on the virtual
    /// clock, a lost notification.
    @Test func pytestRecipesPass() async throws {
        try await withServer(configure: { $0.clock.virtual = true }) { server in
            let output = try await run("/usr/bin/env", args: [
                "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", TestPaths.packageRoot + "/Examples/testing/pytest",
            ], timeout: 60, environment: ProcessInfo.processInfo.environment.merging([
                "SANDBOX_API": server.httpBase, "APNS_URL": server.httpBase,
                "APNS_KEY_FILE": server.dataDirectory + "/AuthKey_\(testKeyID).p8", "APNS_KEY_ID": testKeyID,
                "APNS_TEAM_ID": testTeamID, "APNS_TOPIC": testTopic,
            ]) { $1 })
            #expect(output.status == 0 && output.stdoutText.contains("4 passed"), "\(output.stdoutText)\(output)")
        }
    }

    /// A reset puts the configuration's rules back and the clock to real time; a snapshot carries the API's rules
    /// and the clock, and restoring it gives the same rules.
    @Test func faultsAndClockInResetAndSnapshot() async throws {
        let configured = try JSONDecoder().decode([FaultRuleSpec].self, from: Data(#"[{"id":"cfg","action":{"close":{}},"match":{"tokenPrefix":"ff"}}]"#.utf8))
        try await withServer(configure: { $0.clock.virtual = true; $0.faults = configured }) { server in
            let api = "\(server.httpBase)/api/v1"
            #expect(try await apiRequest("POST", api + "/faults", #"{"id":"extra","preset":"flaky","percent":10,"seed":5}"#).status == 201)
            #expect(try await apiRequest("POST", api + "/clock/freeze").status == 200)
            let (_, snapshot) = try await apiRequest("GET", api + "/snapshot")
            let rules = ((snapshot?["faults"] as? [String: Any])?["rules"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(rules == ["cfg", "extra"], "\(snapshot ?? [:])")
            #expect((snapshot?["clock"] as? [String: Any])?["mode"] as? String == "frozen")

            #expect(try await apiRequest("POST", api + "/reset").status == 200)
            let (_, afterReset) = try await apiRequest("GET", api + "/faults")
            #expect((afterReset?["rules"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["cfg"])
            #expect(try await apiRequest("GET", api + "/clock").json?["mode"] as? String == "real")

            let document = try JSONSerialization.data(withJSONObject: snapshot ?? [:])
            let (restored, answer) = try await apiRequest("POST", api + "/snapshot", String(decoding: document, as: UTF8.self))
            #expect(restored == 200, "\(answer ?? [:])")
            let (_, afterRestore) = try await apiRequest("GET", api + "/faults/extra")
            #expect(afterRestore?["seed"] as? Int == 5 && afterRestore?["probability"] as? Double == 0.1)
            #expect(try await apiRequest("GET", api + "/clock").json?["mode"] as? String == "frozen")

            var bad = snapshot ?? [:]
            bad["faults"] = ["rules": [["action": ["reject": ["reason": "Nope"]]]]]
            let badDocument = String(decoding: try JSONSerialization.data(withJSONObject: bad), as: UTF8.self)
            let (refused, problem) = try await apiRequest("POST", api + "/snapshot", badDocument)
            let message = (problem?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(refused == 422 || refused == 400, "\(problem ?? [:])")
            #expect(message.contains("faults.rules[0].action.reject.reason"), "\(message)")
        }
    }
}
