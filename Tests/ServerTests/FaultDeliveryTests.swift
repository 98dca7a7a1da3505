// APNs Sandbox — fault rules on the device side (lose, late, extension outcomes), in the configuration, and their API.
import Foundation
@testable import Server
import Testing

@Suite struct FaultDeliveryTests {
    private func addFault(_ server: TestServer, _ json: String) async throws {
        let (status, body) = try await apiRequest("POST", "\(server.httpBase)/api/v1/faults", json)
        #expect(status == 201, "\(json) → \(status) \(body ?? [:])")
    }

    private func record(_ server: TestServer, _ apnsID: String, wait: Bool = true) async throws -> [String: Any] {
        let (status, body) = try await apiRequest("GET", "\(server.httpBase)/api/v1/notifications/\(apnsID)\(wait ? "?wait=5" : "")")
        #expect(status == 200)
        return body ?? [:]
    }

    private func steps(_ record: [String: Any]) -> [String] {
        (record["timeline"] as? [[String: Any]] ?? []).compactMap { $0["step"] as? String }
    }

    /// `lose`: APNs answers 200, the device never sees it (discarded, and the timeline says by which rule).
    /// `deliverLate`: 200 at once, displayed only once the (virtual) clock has passed the delay.
    @Test func loseAndDeliverLate() async throws {
        try await withServer(configure: { $0.clock.virtual = true; $0.clock.frozen = true }) { server in
            try await addFault(server, #"{"id":"lost","name":"black hole","match":{"tokenPrefix":"0001"},"action":{"lose":{}}}"#)
            try await addFault(server, #"{"id":"slow","match":{"tokenPrefix":"0002"},"action":{"deliverLate":{"milliseconds":60000}}}"#)
            let lost = try await pushAlert(server, device: "0001" + String(repeating: "ab", count: 30))
            #expect(!lost.isEmpty)
            let lostRecord = try await record(server, lost)
            #expect(lostRecord["status"] as? String == "discarded", "\(lostRecord)")
            let lastDetail = (lostRecord["timeline"] as? [[String: Any]])?.last?["detail"] as? String
            #expect(lastDetail == "lost before the device by fault rule lost (black hole) (APNs answered 200)")
            let faults = lostRecord["faults"] as? [[String: Any]] ?? []
            #expect(faults.first?["ruleId"] as? String == "lost" && faults.first?["action"] as? String == "lose")

            let late = try await pushAlert(server, device: "0002" + String(repeating: "ab", count: 30))
            #expect(!late.isEmpty, "the 200 does not wait for the delivery")
            // The delay is armed (on the frozen clock) however long a loaded machine takes to get there.
            let early = try await pollFor("the late push's delay to be armed") {
                let early = try await record(server, late, wait: false)
                return steps(early).contains("delayed") ? early : nil
            }
            #expect(early["status"] as? String == "accepted" && steps(early).contains("delayed"), "\(early)")
            #expect(try await apiRequest("POST", "\(server.httpBase)/api/v1/clock/advance", #"{"seconds":59}"#).status == 200)
            #expect(try await record(server, late, wait: false)["status"] as? String == "accepted")
            #expect(try await apiRequest("POST", "\(server.httpBase)/api/v1/clock/advance", #"{"seconds":1}"#).status == 200)
            let shown = try await record(server, late)
            #expect(shown["status"] as? String == "displayed", "\(shown)")
            #expect(steps(shown).firstIndex(of: "delayed").map { $0 < (steps(shown).firstIndex(of: "displayed") ?? 0) } == true)
        }
    }

    /// Forced extension outcomes: a crash shows the original at once (`original-crash`); a timeout runs the
    /// budget and the grace and shows the original (`original-timeout`); the app's own extension never runs.
    @Test func forcedExtensionOutcomes() async throws {
        try await withServer(configure: { $0.extensions.allowBudgetHeader = true }) { server in
            let configured = try await apiRequest(
                "PATCH", "\(server.httpBase)/api/v1/apps/\(testTopic)",
                #"{"serviceExtension":{"kind":"builtin","budgetMs":200,"graceMs":100,"steps":[{"step":"rewrite","title":"[Processed] {{title}}"}]}}"#)
            #expect(configured.status == 200, "\(configured)")
            try await addFault(server, #"{"match":{"tokenPrefix":"0003"},"action":{"extensionCrash":{}}}"#)
            try await addFault(server, #"{"match":{"tokenPrefix":"0004"},"action":{"extensionTimeout":{}}}"#)
            let payload = #"{"aps":{"alert":{"title":"Hi","body":"b"},"mutable-content":1}}"#
            let crashed = try await record(server, try await pushAlert(server, device: "0003" + String(repeating: "ab", count: 30), body: payload))
            #expect(crashed["outcome"] as? String == "original-crash", "\(crashed)")
            #expect(steps(crashed).contains("extension-fault") && steps(crashed).contains("extension-crashed"))
            #expect((crashed["displayed"] as? [String: Any])?["title"] as? String == "Hi")

            let timedOut = try await record(server, try await pushAlert(server, device: "0004" + String(repeating: "ab", count: 30), body: payload))
            #expect(timedOut["outcome"] as? String == "original-timeout", "\(timedOut)")
            #expect(steps(timedOut).contains("extension-time-will-expire"), "\(steps(timedOut))")
            #expect((timedOut["displayed"] as? [String: Any])?["title"] as? String == "Hi")

            let normal = try await record(server, try await pushAlert(server, device: "0005" + String(repeating: "ab", count: 30), body: payload))
            #expect(normal["outcome"] as? String == "processed" && normal["faults"] == nil)
        }
    }

    /// Rules from the configuration file are in force from the start, first in the order, named `config-<n>`
    /// without an id; a bad one is a configuration error that names its field.
    @Test func configurationRules() async throws {
        let spec = try JSONDecoder().decode([FaultRuleSpec].self, from: Data(#"""
            [{"match":{"tokenPrefix":"0006"},"action":{"reject":{"reason":"Unregistered"}}}]
            """#.utf8))
        try await withServer(configure: { $0.faults = spec }) { server in
            try await addFault(server, #"{"id":"first","match":{"tokenPrefix":"0006"},"action":{"reject":{"reason":"BadTopic"}},"position":0}"#)
            let (_, listing) = try await apiRequest("GET", "\(server.httpBase)/api/v1/faults")
            let rules = listing?["rules"] as? [[String: Any]] ?? []
            #expect(rules.map { $0["id"] as? String } == ["first", "config-1"])
            #expect(rules.map { $0["source"] as? String } == ["api", "configuration"])
            #expect(try await apiRequest("DELETE", "\(server.httpBase)/api/v1/faults/first").status == 204)
            let output = try await curl([
                "--http2-prior-knowledge", "-s", "-X", "POST", "\(server.httpBase)/3/device/0006\(String(repeating: "ab", count: 30))",
                "-H", server.authorizationHeader, "-H", "apns-topic: \(testTopic)", "-d", #"{"aps":{"alert":"x"}}"#,
            ])
            let answer = jsonObject(output.stdoutText) ?? [:]
            #expect(answer["reason"] as? String == "Unregistered" && answer["timestamp"] is NSNumber, "\(output)")
        }
        var configuration = SandboxConfiguration()
        configuration.faults = try JSONDecoder().decode([FaultRuleSpec].self, from: Data(#"[{"action":{"reject":{"reason":"Nope"}}}]"#.utf8))
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        do {
            try configuration.validate()
        } catch {
            #expect("\(error)".hasPrefix("faults[0].action.reject.reason: is not one of Apple's reasons"), "\(error)")
        }
        let unknown = #"{"faults":[{"action":{"close":{}},"matchh":{}}]}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(SandboxConfiguration.self, from: Data(unknown.utf8)) }
    }

    /// Bad rules get a clear 4xx naming the field; unknown ids 404.
    @Test func apiValidation() async throws {
        try await withServer { server in
            let base = "\(server.httpBase)/api/v1/faults"
            let cases: [(String, Int, String, String)] = [
                (#"{"action":{"close":{}},"matchh":{}}"#, 400, "unknown_field", "matchh"),
                (#"{"action":{"close":{"milliseconds":3}}}"#, 400, "unknown_field", "action.close.milliseconds"),
                (#"{"action":{"explode":{}}}"#, 400, "invalid_field", "action.explode"),
                (#"{"action":{"reject":{"reason":"Nope"}}}"#, 422, "invalid_fault", "action.reject.reason"),
                (#"{"action":{"reject":{"reason":"BadTopic","timestamp":5}}}"#, 422, "invalid_fault", "action.reject.timestamp"),
                (#"{"preset":"outage"}"#, 422, "invalid_fault", "durationSeconds"),
                (#"{"preset":"flaky","percent":150}"#, 422, "invalid_fault", "percent"),
                (#"{"action":{"close":{}},"probability":0}"#, 422, "invalid_fault", "probability"),
                (#"{"match":{"deviceToken":"xyz"},"action":{"close":{}}}"#, 422, "invalid_fault", "match.deviceToken"),
                (#"{"latency":{"fixedMilliseconds":5,"minMilliseconds":1}}"#, 422, "invalid_fault", "latency"),
                (#"{}"#, 422, "invalid_fault", "action"),
                ("[1]", 400, "invalid_field", ""),
                ("{", 400, "invalid_json", ""),
            ]
            for (body, status, code, field) in cases {
                let (got, answer) = try await apiRequest("POST", base, body)
                let error = answer?["error"] as? [String: Any]
                #expect(got == status && error?["code"] as? String == code, "\(body) → \(got) \(answer ?? [:])")
                #expect((error?["message"] as? String ?? "").contains(field), "\(body) → \(answer ?? [:])")
            }
            try await addFault(server, #"{"id":"dup","action":{"close":{}}}"#)
            #expect(try await apiRequest("POST", base, #"{"id":"dup","action":{"close":{}}}"#).status == 409)
            #expect(try await apiRequest("GET", base + "/nope").status == 404)
            #expect(try await apiRequest("DELETE", base + "/nope").status == 404)
            let (_, outage) = try await apiRequest("POST", base, #"{"preset":"outage","durationSeconds":60}"#)
            let action = outage?["action"] as? [String: Any]
            #expect((action?["reject"] as? [String: Any])?["reason"] as? String == "ServiceUnavailable", "\(outage ?? [:])")
            #expect(outage?["expiresAt"] is String && outage?["preset"] == nil)
        }
    }
}
