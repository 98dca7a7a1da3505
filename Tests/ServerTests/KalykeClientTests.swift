// APNs Sandbox — the real `kalyke-apns` client (PyPI), whose tokens say `"iat": "1796651234"` (a string).
import Foundation
import Testing

// A hang detector: the case waits for one of the six provider-server slots (see `withProviderServer`).
@Suite(.scaledTimeLimit(minutes: 2))
struct KalykeClientTests {
    /// Over TLS (h2 by ALPN) with the unmodified library: a token push (200, its apns-id), a bad device token
    /// (kalyke raises BadDeviceToken), a Live Activity update it builds (accepted as a push, 200) and a VoIP push
    /// with a client certificate of the sandbox CA (200). The push log shows what the sandbox saw. The token of each
    /// token push, as kalyke built it (read back by the script from the client it sent with), has `iat` as a JSON
    /// string of digits — the leniency under test, which a kalyke that switched to a number would no longer exercise.
    @Test func tokenCertificateErrorAndLiveActivityPushes() async throws {
        try await withProviderServer { server in
            let certificate = try server.clientCertificate()
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/kalyke_client.py", "--port", "\(server.test.tlsPort)",
                "--ca", server.test.caPath, "--key", server.test.dataDirectory + "/AuthKey_\(testKeyID).p8",
                "--key-id", testKeyID, "--team-id", testTeamID, "--topic", testTopic, "--device", deviceToken,
                "--cert", certificate.certificate, "--cert-key", certificate.key,
            ], timeout: 40)
            try #require(output.status == 0, "\(output)")
            let results = output.stdoutText.split(separator: "\n").compactMap { jsonObject(String($0)) }
            #expect(results.map { $0["case"] as? String } == ["token", "bad-device", "live-activity", "certificate"], "\(output)")
            #expect(results.map { $0["result"] as? String } == ["Success", "BadDeviceToken", "Success", "Success"], "\(output)")
            for result in results.prefix(3) {
                #expect(result["iat_type"] as? String == "string", "\(result)")
                let iat = result["iat"] as? String ?? ""
                #expect(!iat.isEmpty && iat.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }, "\(result)")
            }
            #expect(results.last?["iat_type"] is NSNull, "the certificate push has no token: \(results.last ?? [:])")
            let ids = results.compactMap { $0["apns_id"] as? String }
            #expect(ids.count == 3 && ids.allSatisfy(isLowercaseUUID), "\(results)")

            let log = try await server.pushLog()
            func entry(_ id: String) -> [String: Any]? { log.pushes.first { $0["apnsId"] as? String == id } }
            let token = try #require(entry(ids[0]))
            // The push with kalyke's string iat was accepted (as was the Live Activity update, below).
            #expect(token["status"] as? Int == 200 && token["authentication"] as? String == "token:\(testTeamID)/\(testKeyID)", "\(token)")
            #expect(token["pushType"] as? String == "alert")
            let live = try #require(entry(ids[1]))
            #expect(live["pushType"] as? String == "liveactivity" && live["topic"] as? String == testTopic + ".push-type.liveactivity", "\(live)")
            #expect(live["status"] as? Int == 200)
            let voip = try #require(entry(ids[2]))
            #expect(voip["authentication"] as? String == "certificate:\(testTopic)" && voip["pushType"] as? String == "voip", "\(voip)")
            let refused = log.pushes.filter { $0["reason"] as? String == "BadDeviceToken" }
            #expect(refused.count == 1 && refused.first?["status"] as? Int == 400, "\(log.pushes)")
            // The Live Activity payload as kalyke built it reached the record.
            let notifications = try await apiRequest("GET", server.test.httpBase + "/api/v1/notifications?device=\(deviceToken)&limit=10")
            let stored = notifications.json?["notifications"] as? [[String: Any]] ?? []
            let activity = stored.first { $0["apnsId"] as? String == ids[1] }
            let aps = ((activity?["payload"] as? [String: Any])?["aps"] as? [String: Any]) ?? [:]
            #expect(aps["event"] as? String == "update" && (aps["content-state"] as? [String: Any])?["progress"] as? Double == 0.5, "\(activity ?? [:])")
            #expect(aps["timestamp"] is Int, "\(aps)")
        }
    }
}
