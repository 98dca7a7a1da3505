// APNs Sandbox — from a push on the wire to what the device shows, over the REST inbox.
import Foundation
import Testing

@Suite struct DeliveryEndToEndTests {
    /// Sends one push over h2c; returns (status, apns-id).
    private func push(_ server: TestServer, device: String, payload: String, headers: [String] = []) async throws -> (Int, String) {
        let output = try await curl([
            "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-X", "POST",
            "\(server.httpBase)/3/device/\(device)", "-H", server.authorizationHeader, "-H", "apns-topic: \(testTopic)",
            "-d", payload,
        ] + headers.flatMap { ["-H", $0] })
        let lines = output.stdoutText.split(separator: "\r\n")
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        let apnsID = lines.first { $0.lowercased().hasPrefix("apns-id:") }
            .map { $0.dropFirst("apns-id:".count).trimmingCharacters(in: .whitespaces) } ?? ""
        return (status, apnsID)
    }

    private func getJSON(_ url: String, method: String = "GET", body: String? = nil) async throws -> [String: Any] {
        var arguments = ["-X", method, url]
        if let body { arguments += ["-H", "content-type: application/json", "-d", body] }
        let output = try await curl(arguments)
        return try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any], "not JSON: \(output)")
    }

    /// Provider tokens are credentials: the record keeps its headers with the token redacted, and the
    /// token is nowhere in the database files.
    @Test func providerTokenIsNotStored() async throws {
        try await withServer { server in
            let (status, apnsID) = try await push(server, device: deviceToken, payload: #"{"aps":{"alert":"x"}}"#)
            #expect(status == 200)
            let record = try await getJSON("\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
            let headers = try #require(record["headers"] as? [[String: Any]])
            #expect(headers.contains { $0["name"] as? String == "authorization" && $0["value"] as? String == "bearer <redacted>" })
            let token = Data(server.providerToken.utf8)
            for file in ["sandbox.sqlite", "sandbox.sqlite-wal"] {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: server.dataDirectory + "/" + file))
                #expect(!bytes.isEmpty || file.hasSuffix("-wal"))
                #expect(bytes.range(of: token) == nil, "\(file) holds the provider token")
            }
        }
    }

    /// A payload number beyond a double's range (valid JSON, accepted by APNs' rules) does not break the
    /// API: the record reads back with the number's text; a non-finite relevance score counts as absent.
    @Test func hugeNumbersInPayloadsReadBack() async throws {
        try await withServer { server in
            let (status, apnsID) = try await push(
                server, device: deviceToken, payload: #"{"aps":{"alert":"x","relevance-score":1e400},"n":1e400}"#)
            #expect(status == 200)
            let record = try await getJSON("\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
            let payload = try #require(record["payload"] as? [String: Any])
            #expect(payload["n"] as? String == "1e400")
            let displayed = try #require(record["displayed"] as? [String: Any])
            #expect(displayed["relevanceScore"] == nil)
            #expect((displayed["userInfo"] as? [String: Any])?["n"] as? String == "1e400")
            let list = try await getJSON("\(server.httpBase)/api/v1/notifications?device=\(deviceToken)")
            #expect((list["notifications"] as? [[String: Any]])?.count == 1)
        }
    }

    /// One apns-id sent to two devices (a message to all of a user's devices) is two notifications: each
    /// device shows its own, and the API finds each by apns-id and device (the newest without a device).
    @Test func oneAPNsIDOnTwoDevicesIsTwoNotifications() async throws {
        let other = String(repeating: "c", count: 64)
        let shared = "8d1b9a1e-3c2f-4f7a-9b8e-0a1b2c3d4e5f"
        try await withServer { server in
            let first = try await push(server, device: deviceToken, payload: #"{"aps":{"alert":"to the phone"}}"#,
                                       headers: ["apns-id: \(shared)"])
            let second = try await push(server, device: other, payload: #"{"aps":{"alert":"to the tablet"}}"#,
                                        headers: ["apns-id: \(shared)"])
            #expect(first.0 == 200 && second.0 == 200)
            #expect(first.1 == shared && second.1 == shared)
            let phone = try await getJSON("\(server.httpBase)/api/v1/notifications/\(shared)?device=\(deviceToken)&wait=5")
            let tablet = try await getJSON("\(server.httpBase)/api/v1/notifications/\(shared)?device=\(other)&wait=5")
            #expect((phone["displayed"] as? [String: Any])?["body"] as? String == "to the phone")
            #expect((tablet["displayed"] as? [String: Any])?["body"] as? String == "to the tablet")
            let newest = try await getJSON("\(server.httpBase)/api/v1/notifications/\(shared)")
            #expect(newest["deviceToken"] as? String == other)
            let upper = try await getJSON("\(server.httpBase)/api/v1/notifications/\(shared)?device=\(deviceToken.uppercased())")
            #expect(upper["deviceToken"] as? String == deviceToken, "tokens match in either case")
            for device in [deviceToken, other] {
                let list = try await getJSON("\(server.httpBase)/api/v1/notifications?device=\(device)")
                #expect((list["notifications"] as? [[String: Any]])?.count == 1, "\(device)")
            }
            let missing = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}",
                                          "\(server.httpBase)/api/v1/notifications/\(shared)?device=\(String(repeating: "d", count: 64))"])
            #expect(missing.stdoutText == "404")
        }
    }

    /// Odd but valid payloads (duplicate keys, extreme numbers, escapes, line separators, deep nesting,
    /// numbers where strings are usual) are answered by APNs' rules, and whatever is accepted reads back
    /// through every API view as valid JSON, never as a server error.
    @Test func oddPayloadsReadBackThroughTheAPI() async throws {
        let deep = #"{"aps":{"alert":"deep"},"d":"# + String(repeating: "[", count: 62) + String(repeating: "]", count: 62) + "}"
        let payloads = [
            #"{"aps":{"alert":"a"},"aps":{"alert":"b","badge":2}}"#,
            #"{"aps":{"alert":{"title":"\ud83d\ude00 \u2028","body":"x\u0000y"}},"k":"\u2029"}"#,
            #"{"aps":{"alert":"n"},"a":-0,"b":0.1e-400,"c":123456789012345678901234567890,"d":-1e400}"#,
            #"{"aps":{"alert":{"loc-key":"K","loc-args":[1e400,true,null,{"x":1}]},"badge":1e400}}"#,
            #"{"aps":{"alert":{},"sound":{"name":1,"critical":1e400}},"":""}"#,
            "{\"aps\":{\"alert\":\"raw \u{2028} separators \u{2029}\"}}",
            deep,
        ]
        try await withServer { server in
            var accepted: [String] = []
            for payload in payloads {
                let (status, apnsID) = try await push(server, device: deviceToken, payload: payload)
                #expect([200, 400].contains(status), "\(payload) → \(status)")
                if status == 200 { accepted.append(apnsID) }
            }
            #expect(accepted.count >= 5, "most of these are valid pushes: \(accepted.count)")
            for apnsID in accepted {
                let record = try await getJSON("\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
                #expect(record["final"] as? Bool == true, "\(record)")
            }
            for path in ["/api/v1/notifications?device=\(deviceToken)", "/api/v1/pushes",
                         "/api/v1/devices/\(deviceToken)/notification-center"] {
                let output = try await curl(["-s", "-w", "\n%{http_code}", server.httpBase + path])
                let text = output.stdoutText
                #expect(text.hasSuffix("\n200"), "\(path): \(text.suffix(300))")
                let body = Data(text.dropLast(4).utf8)
                #expect((try? JSONSerialization.jsonObject(with: body)) != nil, "\(path) is not JSON")
            }
        }
    }

    /// A push answered 200 is readable at once; `wait` returns it displayed, with content and timeline.
    @Test func pushIsDisplayedWithTimeline() async throws {
        try await withServer { server in
            let (status, apnsID) = try await push(server, device: deviceToken, payload: #"{"aps":{"alert":{"title":"Hi","body":"There"},"badge":2,"thread-id":"t"},"order":7}"#)
            #expect(status == 200)
            let record = try await getJSON("\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
            #expect(record["status"] as? String == "displayed")
            #expect(record["outcome"] as? String == "direct")
            #expect(record["final"] as? Bool == true)
            let displayed = try #require(record["displayed"] as? [String: Any])
            #expect(displayed["title"] as? String == "Hi")
            #expect(displayed["body"] as? String == "There")
            #expect(displayed["badge"] as? Int == 2)
            #expect(displayed["threadId"] as? String == "t")
            #expect((displayed["userInfo"] as? [String: Any])?["order"] as? Int == 7)
            let steps = (record["timeline"] as? [[String: Any]])?.compactMap { $0["step"] as? String }
            #expect(steps == ["accepted", "delivering", "displayed"])
            #expect((record["jwt"] as? [String: Any])?["teamId"] as? String == testTeamID)
        }
    }

    /// `limit` bounds the Notification Center to its newest notifications and `total` counts them all; a bad
    /// limit is a 400 that names it.
    @Test func notificationCenterLimit() async throws {
        try await withServer { server in
            let device = String(repeating: "ce", count: 32)
            _ = try await getJSON("\(server.httpBase)/api/v1/devices", method: "POST",
                                  body: #"{"token":"\#(device)","apps":["\#(testTopic)"]}"#)
            var pushed: [String] = []
            for index in 0..<3 {
                let (_, apnsID) = try await push(server, device: device, payload: #"{"aps":{"alert":"n\#(index)","badge":\#(index + 1)}}"#)
                #expect(try await getJSON("\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")["status"] as? String == "displayed")
                pushed.insert(apnsID, at: 0)
                try await Task.sleep(nanoseconds: 2_000_000)  // distinct display times
            }
            let base = "\(server.httpBase)/api/v1/devices/\(device)/notification-center"
            let all = try await getJSON(base)
            #expect((all["notifications"] as? [[String: Any]])?.compactMap { $0["apnsId"] as? String } == pushed)
            #expect(all["total"] as? Int == 3)
            let newest = try await getJSON(base + "?limit=2")
            #expect((newest["notifications"] as? [[String: Any]])?.compactMap { $0["apnsId"] as? String } == Array(pushed.prefix(2)))
            #expect(newest["total"] as? Int == 3)
            #expect(newest["badges"] as? [String: Int] == [testTopic: 3])
            for bad in ["0", "ten", "10001"] {
                let answer = try await curl(["-s", "-w", "\n%{http_code}", base + "?limit=" + bad])
                #expect(answer.stdoutText.hasSuffix("\n400") && answer.stdoutText.contains("limit"), "\(bad): \(answer.stdoutText)")
            }
        }
    }

    /// Offline: pushes are stored (only the newest per app survives); online: it is displayed.
    @Test func offlineDeviceGetsStoredPushWhenOnline() async throws {
        try await withServer { server in
            let device = String(repeating: "cd", count: 32)
            let created = try await getJSON(
                "\(server.httpBase)/api/v1/devices", method: "POST",
                body: #"{"token":"\#(device)","apps":["\#(testTopic)"],"online":false}"#)
            #expect(created["online"] as? Bool == false)
            let (_, first) = try await push(server, device: device, payload: #"{"aps":{"alert":"one"}}"#)
            let (status, second) = try await push(server, device: device, payload: #"{"aps":{"alert":"two"}}"#)
            #expect(status == 200)
            #expect(try await getJSON("\(server.httpBase)/api/v1/notifications/\(second)")["status"] as? String == "stored")
            #expect(try await getJSON("\(server.httpBase)/api/v1/notifications/\(first)?wait=5")["status"] as? String == "discarded")
            _ = try await getJSON("\(server.httpBase)/api/v1/devices/\(device)", method: "PATCH", body: #"{"online":true}"#)
            let delivered = try await getJSON("\(server.httpBase)/api/v1/notifications/\(second)?wait=5")
            #expect(delivered["status"] as? String == "displayed")
            let steps = (delivered["timeline"] as? [[String: Any]])?.compactMap { $0["step"] as? String } ?? []
            #expect(steps.first == "accepted" && steps.contains("stored") && steps.last == "displayed")
            let center = try await getJSON("\(server.httpBase)/api/v1/devices/\(device)/notification-center")
            #expect((center["notifications"] as? [[String: Any]])?.map { $0["apnsId"] as? String } == [second])
        }
    }

    /// Localized alerts resolve against the app's strings for the device locale (with fallback).
    @Test func localizedAlertUsesDeviceLocale() async throws {
        try await withServer { server in
            _ = try await getJSON(
                "\(server.httpBase)/api/v1/apps/\(testTopic)", method: "PATCH",
                body: #"{"strings":{"fr":{"INVITE":"%2$@ et %1$@ vous invitent"},"en":{"INVITE":"%2$@ and %1$@ invite you"}}}"#)
            let device = String(repeating: "ef", count: 32)
            _ = try await getJSON(
                "\(server.httpBase)/api/v1/devices", method: "POST",
                body: #"{"token":"\#(device)","apps":["\#(testTopic)"],"locale":"fr_CA"}"#)
            let (_, apnsID) = try await push(
                server, device: device, payload: #"{"aps":{"alert":{"loc-key":"INVITE","loc-args":["Jenna","Frank"]}}}"#)
            let record = try await getJSON("\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
            #expect((record["displayed"] as? [String: Any])?["body"] as? String == "Frank et Jenna vous invitent")
        }
    }

    /// Uninstalling the app over the API makes later pushes 410 Unregistered with the uninstall time.
    @Test func uninstalledAppGetsUnregistered() async throws {
        try await withServer { server in
            let device = String(repeating: "12", count: 32)
            _ = try await getJSON("\(server.httpBase)/api/v1/devices", method: "POST", body: #"{"token":"\#(device)","apps":["\#(testTopic)"]}"#)
            let updated = try await getJSON(
                "\(server.httpBase)/api/v1/devices/\(device)", method: "PATCH", body: #"{"uninstallApps":["\#(testTopic)"]}"#)
            let uninstalledAt = ((updated["apps"] as? [[String: Any]])?.first?["uninstalledAt"] as? Int).map(Int64.init)
            let output = try await curl([
                "--http2-prior-knowledge", "-s", "-X", "POST", "\(server.httpBase)/3/device/\(device)",
                "-H", server.authorizationHeader, "-H", "apns-topic: \(testTopic)", "-d", #"{"aps":{"alert":"x"}}"#,
                "-w", "\n%{http_code}",
            ])
            #expect(output.stdoutText.hasSuffix("\n410"))
            let body = try #require(try JSONSerialization.jsonObject(with: Data(output.stdoutText.split(separator: "\n").first.map { Array($0.utf8) } ?? [])) as? [String: Any])
            #expect(body["reason"] as? String == "Unregistered")
            #expect((body["timestamp"] as? Int).map(Int64.init) == uninstalledAt)
        }
    }

    /// The REST API answers bad input with JSON problems, never a 5xx.
    @Test func badInputGetsProblems() async throws {
        try await withServer { server in
            let cases: [(String, String, String?, Int)] = [
                ("POST", "/api/v1/devices", #"{"token":"xyz"}"#, 422),
                ("POST", "/api/v1/devices", "{nope", 400),
                ("GET", "/api/v1/devices/\(String(repeating: "99", count: 32))", nil, 404),
                ("GET", "/api/v1/notifications?limit=0", nil, 400),
                ("GET", "/api/v1/notifications?status=flying", nil, 400),
                ("GET", "/api/v1/notifications/nope", nil, 404),
                ("DELETE", "/api/v1/notifications", nil, 400),
                ("PATCH", "/api/v1/devices/\(deviceToken)", #"{"uninstallApps":["com.not.installed"]}"#, 404),
            ]
            for (method, path, body, expected) in cases {
                var arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, server.httpBase + path]
                if let body { arguments += ["-H", "content-type: application/json", "-d", body] }
                let output = try await curl(arguments)
                #expect(output.stdoutText == "\(expected)", "\(method) \(path) → \(output.stdoutText)")
            }
        }
    }

    /// `wait?count=N` counts what exists; with `after=<cursor>` of an earlier answer it waits for N new ones.
    @Test func waitForNewNotificationsWithACursor() async throws {
        try await withServer { server in
            let base = server.httpBase + "/api/v1/notifications"
            for _ in 0..<2 { #expect(!(try await pushAlert(server)).isEmpty) }
            let existing = try await apiRequest("GET", base + "/wait?count=2&timeout=5")
            #expect(existing.status == 200)
            let cursor = try #require(existing.json?["cursor"] as? Int)
            let listed = try await apiRequest("GET", base + "?limit=1")
            #expect(listed.json?["cursor"] as? Int == cursor)

            let none = try await apiRequest("GET", base + "/wait?count=1&after=\(cursor)&timeout=0.3")
            #expect(none.status == 408, "the two old notifications count as new: \(none)")
            async let waited = apiRequest("GET", base + "/wait?count=1&after=\(cursor)&timeout=10")
            try await Task.sleep(nanoseconds: 200_000_000)
            let apnsID = try await pushAlert(server)
            let answer = try await waited
            #expect(answer.status == 200)
            let ids = (answer.json?["notifications"] as? [[String: Any]])?.compactMap { $0["apnsId"] as? String }
            #expect(ids == [apnsID], "\(answer)")
            #expect((answer.json?["cursor"] as? Int ?? 0) > cursor)
            let newer = try await apiRequest("GET", base + "?after=\(cursor)")
            #expect(newer.json?["total"] as? Int == 1)
            let bad = try await apiRequest("GET", base + "?after=-1")
            #expect(bad.status == 400)

            // A new push that reuses an apns-id on the same device is new for the cursor too.
            let reused = "11111111-2222-3333-4444-555555555555"
            func pushWithID() async throws -> String {
                try await curl([
                    "--http2-prior-knowledge", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                    "\(server.httpBase)/3/device/\(deviceToken)", "-H", server.authorizationHeader,
                    "-H", "apns-topic: \(testTopic)", "-H", "apns-id: \(reused)", "-d", #"{"aps":{"alert":"again"}}"#,
                ]).stdoutText
            }
            #expect(try await pushWithID() == "200")
            _ = try await apiRequest("GET", base + "/\(reused)?wait=5")
            let before = try #require(try await apiRequest("GET", base + "?limit=1").json?["cursor"] as? Int)
            #expect(try await pushWithID() == "200")
            let again = try await apiRequest("GET", base + "/wait?count=1&after=\(before)&timeout=5")
            #expect(again.status == 200, "the replacing push is not after the cursor: \(again)")
        }
    }
}
