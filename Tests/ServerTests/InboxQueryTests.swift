// APNs Sandbox — the inbox's queries over a real server: notification and push-log filters, paging, search.
import Foundation
import Testing

@Suite("Inbox queries")
struct InboxQueryTests {
    /// Posts a push with extra headers over h2c; returns the HTTP status and the apns-id header.
    func push(_ server: TestServer, topic: String = testTopic, headers: [String] = [], body: String) async throws -> (Int, String) {
        var args = ["--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-X", "POST",
                    "\(server.httpBase)/3/device/\(deviceToken)", "-H", server.authorizationHeader, "-H", "apns-topic: \(topic)"]
        for header in headers { args += ["-H", header] }
        let text = try await curl(args + ["-d", body]).stdoutText
        let status = Int(text.dropFirst("HTTP/2 ".count).prefix(3)) ?? 0
        let id = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("apns-id:") }
            .map { $0.dropFirst("apns-id:".count).trimmingCharacters(in: .whitespaces) } ?? ""
        try await Task.sleep(nanoseconds: 5_000_000)  // distinct receivedAt milliseconds
        return (status, id)
    }

    func ids(_ server: TestServer, _ path: String, key: String = "notifications") async throws -> [String] {
        let (status, json) = try await apiRequest("GET", server.httpBase + path)
        #expect(status == 200, "\(path) → \(status) \(json ?? [:])")
        return (json?[key] as? [[String: Any]] ?? []).compactMap { $0["apnsId"] as? String }
    }

    @Test("notifications and pushes answer each filter, newest first; until pages without gaps")
    func filters() async throws {
        try await withServer { server in
            let zebra = try await pushAlert(server, body: #"{"aps":{"alert":{"title":"Zoo","body":"Hello Zebra"}}}"#)
            let (_, silent) = try await push(server, headers: ["apns-push-type: background", "apns-priority: 5"],
                                             body: #"{"aps":{"content-available":1}}"#)
            let (badTopicStatus, badTopic) = try await push(server, topic: "com.example.other", body: #"{"aps":{"alert":"x"}}"#)
            let (badPayloadStatus, badPayload) = try await push(server, body: "not json")
            let plain = try await pushAlert(server, body: #"{"aps":{"alert":"plain"}}"#)
            #expect(!zebra.isEmpty && !silent.isEmpty && !plain.isEmpty)
            #expect(badTopicStatus == 400 && badPayloadStatus == 400)
            let (waited, _) = try await apiRequest("GET", server.httpBase + "/api/v1/notifications/wait?count=3&timeout=20")
            #expect(waited == 200)

            let base = "/api/v1/notifications?"
            #expect(try await ids(server, base) == [plain, silent, zebra])
            #expect(try await ids(server, base + "pushType=background") == [silent])
            // apns-ids are UUIDv7 (time first): a prefix must reach past the time to name one.
            // As recorded: pushAlert sends no apns-push-type header, so its pushes have none.
            #expect(try await ids(server, base + "pushType=alert,background") == [silent])
            #expect(try await ids(server, base + "q=zebra") == [zebra])
            #expect(try await ids(server, base + "q=\(deviceToken.prefix(10).uppercased())") == [plain, silent, zebra])
            let byID = try await ids(server, base + "q=\(zebra.dropLast(6))")
            #expect(byID == [zebra], "q=\(zebra.dropLast(6)) → \(byID)")
            #expect(try await ids(server, base + "status=delivered-silent") == [silent])
            #expect(try await ids(server, base + "status=displayed,delivered-silent&q=plain") == [plain])
            #expect(try await ids(server, base + "outcome=original-timeout") == [])
            // Paging back in time with until: one record a page, all of them once.
            var seen: [String] = []
            var until: Int64?
            for _ in 0..<5 {
                let (_, json) = try await apiRequest("GET", server.httpBase + base + "limit=1" + (until.map { "&until=\($0)" } ?? ""))
                guard let record = (json?["notifications"] as? [[String: Any]])?.first else { break }
                seen.append(record["apnsId"] as? String ?? "")
                until = (record["receivedAt"] as? NSNumber)?.int64Value
            }
            #expect(seen == [plain, silent, zebra])

            let pushes = "/api/v1/pushes?"
            #expect(try await ids(server, pushes, key: "pushes") == [plain, badPayload, badTopic, silent, zebra])
            #expect(try await ids(server, pushes + "status=rejected", key: "pushes") == [badPayload, badTopic])
            #expect(try await ids(server, pushes + "status=accepted&pushType=background", key: "pushes") == [silent])
            #expect(try await ids(server, pushes + "reason=TopicDisallowed,BadTopic,DeviceTokenNotForTopic", key: "pushes") == [badTopic])
            #expect(try await ids(server, pushes + "topic=com.example.other", key: "pushes") == [badTopic])
            #expect(try await ids(server, pushes + "device=\(deviceToken.prefix(6))&limit=2", key: "pushes") == [plain, badPayload])
            let pushByID = try await ids(server, pushes + "q=\(silent.dropLast(6))", key: "pushes")
            #expect(pushByID == [silent], "q=\(silent.dropLast(6)) → \(pushByID)")

            for (path, field) in [(base + "status=bogus", "status"), (base + "until=abc", "until"), (base + "outcome=nope", "outcome"),
                                  (base + "pushType=fax", "pushType"), (pushes + "status=maybe", "status"),
                                  (pushes + "reason=Nope", "reason"), (pushes + "until=abc", "until")] {
                let (status, json) = try await apiRequest("GET", server.httpBase + path)
                let message = (json?["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(status == 400 && message.hasPrefix(field), "\(path) → \(status) \(message)")
            }
        }
    }
}
