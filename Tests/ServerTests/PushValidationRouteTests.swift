// APNs Sandbox — `/api/v1/pushes/validate` agrees with the provider endpoint, case by case.
import Foundation
@testable import Server
import Testing

@Suite struct PushValidationRouteTests {
    struct Case: Sendable {
        var name: String
        var token: String = deviceToken
        var headers: [String: String] = ["apns-topic": testTopic]
        var payload: String = #"{"aps":{"alert":"Hi"}}"#
    }

    static let cases: [Case] = [
        Case(name: "valid alert"),
        Case(name: "bad token", token: "zz12"),
        Case(name: "short token", token: "abcd"),
        Case(name: "missing topic", headers: [:]),
        Case(name: "payload too large", payload: #"{"aps":{"alert":""# + String(repeating: "x", count: 4100) + #""}}"#),
        Case(name: "bad JSON", payload: #"{"aps":"#),
        Case(name: "missing aps", payload: #"{"hello":1}"#),
        Case(name: "empty payload", payload: ""),
        Case(name: "background priority 10", headers: ["apns-topic": testTopic, "apns-push-type": "background", "apns-priority": "10"],
             payload: #"{"aps":{"content-available":1}}"#),
        Case(name: "background default priority", headers: ["apns-topic": testTopic, "apns-push-type": "background"],
             payload: #"{"aps":{"content-available":1}}"#),
        Case(name: "unknown push type", headers: ["apns-topic": testTopic, "apns-push-type": "shout"]),
        Case(name: "voip topic without suffix", headers: ["apns-topic": testTopic, "apns-push-type": "voip"]),
        Case(name: "bad priority", headers: ["apns-topic": testTopic, "apns-priority": "7"]),
        Case(name: "bad apns-id", headers: ["apns-topic": testTopic, "apns-id": "nope"]),
        Case(name: "topic not on the device", headers: ["apns-topic": "com.example.other"]),
    ]

    /// Status and reason of the real push over h2c.
    private func pushForReal(_ server: TestServer, _ item: Case) async throws -> (Int, String?) {
        var args = ["--http2-prior-knowledge", "-w", "\n%{http_code}", "-X", "POST", "\(server.httpBase)/3/device/\(item.token)",
                    "-H", server.authorizationHeader, "--data-binary", item.payload]
        for (name, value) in item.headers { args += ["-H", "\(name): \(value)"] }
        let lines = try await curl(args).stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.last ?? "") ?? 0
        let body = lines.dropLast().joined(separator: "\n")
        let reason = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        return (status, reason?["reason"] as? String)
    }

    private func validate(_ server: TestServer, _ item: Case) async throws -> [String: Any] {
        let body = try JSONSerialization.data(withJSONObject: ["deviceToken": item.token, "headers": item.headers, "payload": item.payload])
        let (status, json) = try await apiRequest("POST", "\(server.httpBase)/api/v1/pushes/validate", String(decoding: body, as: UTF8.self))
        #expect(status == 200, "\(item.name): \(json ?? [:])")
        return json ?? [:]
    }

    @Test func agreesWithTheProviderEndpoint() async throws {
        try await withServer { server in
            // The device is known (with the test app) before the table: DeviceTokenNotForTopic is then decidable.
            #expect(try await !pushAlert(server).isEmpty)
            for item in Self.cases {
                let verdict = try await validate(server, item)
                let (status, reason) = try await pushForReal(server, item)
                #expect(verdict["status"] as? Int == status, "\(item.name): \(verdict) vs \(status) \(reason ?? "")")
                #expect((verdict["reason"] as? String) == reason, "\(item.name): \(verdict) vs \(status) \(reason ?? "")")
                #expect(verdict["valid"] as? Bool == (status == 200), "\(item.name)")
                #expect(verdict.keys.contains("reason") && !(verdict["message"] as? String ?? "").isEmpty, "\(item.name)")
            }
            let background = try await validate(server, Self.cases[9])
            #expect(background["pushType"] as? String == "background" && background["priority"] as? Int == 5)
        }
    }

    @Test func unknownDevicesFollowThePolicyAndChangeNothing() async throws {
        let other = "00ff" + String(repeating: "11", count: 30)
        try await withServer(configure: { $0.apns.unknownDeviceTokens = .strict }) { server in
            let verdict = try await validate(server, Case(name: "unknown device", token: other))
            #expect(verdict["reason"] as? String == "BadDeviceToken" && verdict["status"] as? Int == 400, "\(verdict)")
        }
        try await withServer { server in
            let verdict = try await validate(server, Case(name: "unknown device", token: other))
            #expect(verdict["valid"] as? Bool == true, "\(verdict)")
            let (status, _) = try await apiRequest("GET", "\(server.httpBase)/api/v1/devices/\(other)")
            #expect(status == 404, "validating registers no device")
        }
    }

    @Test func malformedBodiesNameTheField() async throws {
        try await withServer { server in
            let url = "\(server.httpBase)/api/v1/pushes/validate"
            let missing = try await apiRequest("POST", url, #"{"payload":"{}"}"#)
            #expect(missing.status == 400 && "\(missing.json ?? [:])".contains("deviceToken"))
            let unknown = try await apiRequest("POST", url, #"{"deviceToken":"ab","payload":"{}","hedaers":{}}"#)
            #expect(unknown.status == 400 && "\(unknown.json ?? [:])".contains("hedaers"))
            let wrong = try await apiRequest("POST", url, #"{"deviceToken":"ab","payload":{"aps":{}}}"#)
            #expect(wrong.status == 400 && "\(wrong.json ?? [:])".contains("payload"), "\(wrong.json ?? [:])")
        }
    }
}
