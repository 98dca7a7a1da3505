// APNs Sandbox — end to end: POST /api/v1/reset and GET|POST /api/v1/snapshot with real clients.
import APNsProtocol
import Crypto
import Foundation
import Sandbox
import Server
import Synchronization
import TestProcessSupport
import Testing
import Webhooks
import Support

@Suite(.serialized, .scaledTimeLimit(minutes: 4))
struct ResetSnapshotTests {
    /// Pushes from aioapns (to the configured device and to new tokens), a device created through the API,
    /// the configured device taken offline with a stored push and its app uninstalled: a reset brings back
    /// exactly the seed — the configured device online with its app, no other device, no notification, no
    /// push in the log, an event log holding only the reset — and the device takes pushes again.
    @Test func resetAfterRealClientPushesReturnsToTheSeed() async throws {
        try await withSeededServer { server in
            let base = server.httpBase
            #expect(try await aioapnsPush(server, token: seededToken, count: 5) == ["200": 5])
            #expect(try await aioapnsPush(server, token: nil, count: 5) == ["200": 5])
            let created = try await apiPost(base, "/api/v1/devices", #"{"apps":["\#(testTopic)"]}"#)
            #expect(created.status == 201)
            #expect(try await apiRequest("PATCH", "\(base)/api/v1/devices/\(seededToken)", #"{"online":false}"#).status == 200)
            #expect(try await pushStatus(server, token: seededToken) == 200)
            #expect(try await apiRequest("PATCH", "\(base)/api/v1/devices/\(seededToken)", #"{"uninstallApps":["\#(testTopic)"]}"#).status == 200)
            #expect(try await pushStatus(server, token: seededToken) == 410, "uninstalled: Unregistered")
            #expect(try await apiPost(base, "/api/v1/apps", #"{"bundleId":"com.runtime.app","teamId":"\#(testTeamID)"}"#).status == 201)
            let before = try await apiRequest("GET", "\(base)/api/v1/devices")
            #expect((before.json?["devices"] as? [Any])?.count == 7)

            let reset = try await apiPost(base, "/api/v1/reset")
            #expect(reset.status == 200, "\(String(describing: reset.json))")
            let summary = try #require(reset.json?["reset"] as? [String: Any])
            #expect(summary["scope"] as? String == "all")
            #expect(summary["notificationsRemoved"] as? Int == 11)
            #expect(summary["devicesRemoved"] as? Int == 6)
            #expect(summary["devicesRestored"] as? Int == 1)
            #expect(summary["appsRemoved"] as? Int == 1)

            let devices = try #require(try await apiRequest("GET", "\(base)/api/v1/devices").json?["devices"] as? [[String: Any]])
            #expect(devices.count == 1)
            let device = try #require(devices.first)
            #expect(device["token"] as? String == seededToken)
            #expect(device["online"] as? Bool == true)
            let apps = try #require(device["apps"] as? [[String: Any]])
            #expect(apps.count == 1 && apps.first?["bundleId"] as? String == testTopic && apps.first?["uninstalledAt"] == nil)
            let appList = try #require(try await apiRequest("GET", "\(base)/api/v1/apps").json?["apps"] as? [[String: Any]])
            #expect(Set(appList.compactMap { $0["bundleId"] as? String }) == [testTopic, otherTopic])
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["total"] as? Int == 0)
            let log = try await apiRequest("GET", "\(base)/api/v1/pushes")
            #expect((log.json?["pushes"] as? [Any])?.isEmpty == true && log.json?["accepted"] as? Int == 0)
            let history = try SSEClient("\(base)/api/v1/events?lastEventId=0")
            let events = try await history.waitFor { !$0.isEmpty }
            history.stop()
            #expect(events.map(\.event) == ["sandbox.reset"], "the log holds only the reset")
            #expect(events.first?.id.map { "evt_\($0)" } == summary["eventId"] as? String)

            #expect(try await aioapnsPush(server, token: seededToken, count: 3) == ["200": 3], "not 410: the app is back")
            let wait = try await apiRequest("GET", "\(base)/api/v1/notifications/wait?count=3&status=displayed&timeout=10")
            #expect(wait.status == 200)
            #expect(try await apiRequest("GET", "\(base)/api/v1/devices").json.map { ($0["devices"] as? [Any])?.count } == 1)
        }
    }

    /// A device scope removes that device's notifications and events and puts it back to its seed (or
    /// removes it); an app scope removes that app's notifications and its installs on devices the
    /// configuration does not give it; a team scope covers every app of the team. Nothing else changes.
    @Test func scopedResetsTouchOnlyTheirScope() async throws {
        try await withSeededServer { server in
            let base = server.httpBase
            let runtime = String(repeating: "a1", count: 32)
            let both = String(repeating: "b2", count: 32)
            #expect(try await pushStatus(server, token: runtime) == 200)
            #expect(try await apiPost(base, "/api/v1/devices", #"{"token":"\#(both)","apps":["\#(testTopic)","\#(otherTopic)"]}"#).status == 201)
            #expect(try await pushStatus(server, token: both) == 200)
            #expect(try await pushStatus(server, token: both, topic: otherTopic) == 200)
            #expect(try await pushStatus(server, token: seededToken) == 200)
            #expect(try await apiRequest("PATCH", "\(base)/api/v1/devices/\(seededToken)", #"{"online":false}"#).status == 200)
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["total"] as? Int == 4)

            // One device: its notification and events go, the device too (the configuration lacks it).
            let byDevice = try await apiPost(base, "/api/v1/reset", #"{"deviceToken":"\#(runtime.uppercased())"}"#)
            #expect(byDevice.status == 200)
            #expect((byDevice.json?["reset"] as? [String: Any])?["notificationsRemoved"] as? Int == 1)
            #expect(try await apiRequest("GET", "\(base)/api/v1/devices/\(runtime)").status == 404)
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["total"] as? Int == 3)
            let deviceEvents = try SSEClient("\(base)/api/v1/events?lastEventId=0&device=\(runtime)")
            let seen = try await deviceEvents.waitFor { !$0.isEmpty }
            deviceEvents.stop()
            #expect(seen.map(\.event) == ["sandbox.reset"], "the device's events went; the reset is about it")

            // The configured device: back online, with its notification gone.
            #expect(try await apiPost(base, "/api/v1/reset", #"{"deviceToken":"\#(seededToken)"}"#).status == 200)
            let seeded = try await apiRequest("GET", "\(base)/api/v1/devices/\(seededToken)")
            #expect(seeded.json?["online"] as? Bool == true)
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications?device=\(seededToken)").json?["total"] as? Int == 0)

            // One app: its notification goes and so does its install on the API-made device; the other app stays.
            let byApp = try await apiPost(base, "/api/v1/reset", #"{"bundleId":"\#(otherTopic)"}"#)
            #expect((byApp.json?["reset"] as? [String: Any])?["notificationsRemoved"] as? Int == 1)
            let remaining = try #require(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["notifications"] as? [[String: Any]])
            #expect(remaining.map { $0["bundleId"] as? String } == [testTopic])
            let device = try await apiRequest("GET", "\(base)/api/v1/devices/\(both)")
            #expect((device.json?["apps"] as? [[String: Any]])?.map { $0["bundleId"] as? String } == [testTopic])
            #expect(try await apiRequest("GET", "\(base)/api/v1/apps/\(otherTopic)").status == 200, "a configured app stays")

            // The team: every app of it; the API-made device is left with no app and goes.
            let byTeam = try await apiPost(base, "/api/v1/reset", #"{"teamId":"\#(testTeamID)"}"#)
            #expect((byTeam.json?["reset"] as? [String: Any])?["notificationsRemoved"] as? Int == 1)
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["total"] as? Int == 0)
            #expect(try await apiRequest("GET", "\(base)/api/v1/devices/\(both)").status == 404)
            #expect(try await apiRequest("GET", "\(base)/api/v1/devices/\(seededToken)").status == 200)

            // Bad scopes change nothing.
            #expect(try await apiPost(base, "/api/v1/reset", #"{"deviceToken":"xyz"}"#).status == 422)
            #expect(try await apiPost(base, "/api/v1/reset", #"{"teamId":"T","bundleId":"a.b"}"#).status == 422)
            #expect(try await apiPost(base, "/api/v1/reset", #"{"device":"x"}"#).status == 400)
        }
    }

    /// An SSE stream stays open across a reset: it gets the events before, the sandbox.reset, and the
    /// events after, in growing id order; a webhook subscription is kept and delivers the new events.
    @Test func streamsAndWebhooksGoOnAcrossAReset() async throws {
        let secret = WebhookSignature.generateSecret()
        let receiver = try await WebhookReceiver(secret: secret)
        try await withSeededServer { server in
            let base = server.httpBase
            let created = try await apiPost(base, "/api/v1/webhooks", #"{"url":"\#(receiver.url)","secret":"\#(secret)","events":["push.accepted","sandbox.reset"]}"#)
            #expect(created.status == 201)
            let stream = try SSEClient("\(base)/api/v1/events?type=push.accepted,sandbox.reset")
            try await stream.waitUntilConnected()
            let first = try await pushAlert(server)
            _ = try await stream.waitFor { $0.count == 1 }
            #expect(try await apiPost(base, "/api/v1/reset").status == 200)
            let second = try await pushAlert(server)
            let events = try await stream.waitFor { $0.count == 3 }
            stream.stop()
            #expect(events.map(\.event) == ["push.accepted", "sandbox.reset", "push.accepted"])
            #expect(events.map(\.apnsID) == [first, nil, second])
            let ids = events.compactMap(\.id)
            #expect(ids.count == 3 && ids == ids.sorted() && Set(ids).count == 3, "ids keep growing: \(ids)")

            let requests = try await receiver.waitFor { requests in requests.count >= 3 && requests.contains { $0.apnsID == second } }
            // Deliveries are concurrent and may arrive in any order (docs/events.md): in event id order.
            let inEventOrder = requests.sorted { Int($0.eventID.dropFirst(4)) ?? 0 < Int($1.eventID.dropFirst(4)) ?? 0 }
            #expect(inEventOrder.map(\.type) == ["push.accepted", "sandbox.reset", "push.accepted"], "\(requests)")
            #expect(requests.allSatisfy { $0.valid })
            #expect((try await apiRequest("GET", "\(base)/api/v1/webhooks").json?["webhooks"] as? [Any])?.count == 1)
        }
    }

    /// Resets while aioapns sends hundreds of pushes to new devices: every push is answered 200, the server
    /// stays ready, and after a last reset nothing of those pushes comes back.
    @Test func resetsWithPushesInFlight() async throws {
        try await withSeededServer { server in
            let base = server.httpBase
            let finished = Flag()
            let pushing = Task {
                defer { finished.set() }
                return try await aioapnsPush(server, token: nil, count: 400, concurrency: 40, timeout: 40)
            }
            var (resets, removed, forgotten) = (0, 0, 0)
            while !finished.isSet || resets < 5 {
                let reset = try await apiPost(base, "/api/v1/reset")
                #expect(reset.status == 200, "\(String(describing: reset.json))")
                let summary = reset.json?["reset"] as? [String: Any]
                removed += summary?["notificationsRemoved"] as? Int ?? 0
                forgotten += summary?["pushesForgotten"] as? Int ?? 0
                resets += 1
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            #expect(try await pushing.value == ["200": 400])
            print("\(resets) resets during 400 pushes removed \(removed) notifications and forgot \(forgotten) pushes on their way")
            #expect(removed > 0, "the resets ran while pushes arrived")
            #expect(try await apiPost(base, "/api/v1/reset").status == 200)
            // Nothing is left when the reset answers (it forgets the pushes on their way before its transaction),
            // and nothing of them is written afterwards: checked at once, and again after a moment in which a
            // late write would show (a loaded machine can only make that moment miss one, never fail a good run).
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["total"] as? Int == 0)
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["total"] as? Int == 0)
            let devices = try await apiRequest("GET", "\(base)/api/v1/devices").json?["devices"] as? [[String: Any]]
            #expect(devices?.map { $0["token"] as? String } == [seededToken])
            let ready = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "\(base)/readyz"])
            #expect(ready.stdoutText == "200")
            #expect(try await pushStatus(server, token: seededToken) == 200)
        }
    }

    /// A reset of 10,000 notifications (and their events) takes well under a second.
    @Test func resetOfTenThousandNotificationsIsQuick() async throws {
        try await withSeededServer { server in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            for batch in 0..<10 {
                let records = (0..<1000).map { index in
                    NotificationRecord(
                        apnsID: "00000000-0000-4000-8000-\(String(format: "%012d", batch * 1000 + index))",
                        deviceToken: seededToken, bundleID: testTopic, topic: testTopic, payload: #"{"aps":{"alert":"Hi"}}"#,
                        receivedAt: now, status: .displayed)
                }
                let events = records.map {
                    EventDraft(type: .notificationDisplayed, time: now, deviceToken: seededToken, topic: testTopic,
                               data: Array(#"{"apnsId":"\#($0.apnsID)","bundleId":"\#(testTopic)"}"#.utf8))
                }
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    server.server.store.save(records, events: events) { continuation.resume(with: $0) }
                }
            }
            #expect(try await apiRequest("GET", "\(server.httpBase)/api/v1/notifications?limit=1").json?["total"] as? Int == 10_000)
            let start = monotonicSeconds()
            let reset = try await apiPost(server.httpBase, "/api/v1/reset")
            let seconds = monotonicSeconds() - start
            let summary = try #require(reset.json?["reset"] as? [String: Any])
            #expect(summary["notificationsRemoved"] as? Int == 10_000)
            #expect((summary["eventsRemoved"] as? Int ?? 0) >= 10_000, "and the seed's device event")
            print("reset of 10,000 notifications and 10,000 events: \(summary["durationMs"] ?? "?") ms in the server, \(Int(seconds * 1000)) ms over HTTP")
            #expect(seconds < 2, "took \(seconds) s")
        }
    }

    /// A snapshot taken with notifications and secrets and restored on a server with a fresh data directory
    /// (the same configuration) gives the same API answers: devices, apps, webhooks, notifications, each
    /// notification and each device's notification center; its own snapshot equals the first. A stored
    /// notification is delivered once its device comes online there. A provider key the configuration
    /// lacks is reported, not registered.
    @Test func snapshotRoundTripOntoAFreshDataDirectory() async throws {
        try await withSeededServer { source in
            let base = source.httpBase
            #expect(try await aioapnsPush(source, token: seededToken, count: 2) == ["200": 2])
            let offline = String(repeating: "0f", count: 32)
            let key = Data((0..<32).map { UInt8($0) }).base64EncodedString()
            #expect(try await apiPost(base, "/api/v1/devices", #"{"token":"\#(offline)","online":false,"locale":"fr","apps":["\#(testTopic)"],"keys":{"\#(testTopic)":"\#(key)"}}"#).status == 201)
            #expect(try await pushStatus(source, token: offline, body: #"{"aps":{"alert":"later","badge":4},"n":1.5}"#) == 200)
            #expect(try await apiRequest("PATCH", "\(base)/api/v1/apps/\(otherTopic)",
                #"{"strings":{"fr":{"HI":"Salut"}},"serviceExtension":{"kind":"builtin","steps":[{"step":"rewrite","title":"[x] {{title}}"}]}}"#).status == 200)
            let hook = try await apiPost(base, "/api/v1/webhooks",
                #"{"url":"http://127.0.0.1:9/hook","devices":["\#(String(repeating: "00", count: 32))"],"description":"never fires"}"#)
            #expect(hook.status == 201)

            let exported = try await curl(["\(base)/api/v1/snapshot?notifications=true&secrets=true"])
            var document = try #require(jsonObject(exported.stdout))
            #expect(document["version"] as? Int == 1)
            #expect((document["notifications"] as? [Any])?.count == 3)
            let foreign = try ES256PrivateKey.generate().publicKey.pem
            var keys = try #require(document["providerKeys"] as? [[String: Any]])
            #expect(keys.map { $0["keyId"] as? String } == [testKeyID])
            keys.append(["teamId": "FOREIGN", "keyId": "FOREIGNKEY", "publicKey": foreign])
            document["providerKeys"] = keys
            let body = String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self)

            try await withSeededServer(configure: { $0.teams = source.configuration.teams }) { target in
                let restored = try await apiPost(target.httpBase, "/api/v1/snapshot", body)
                #expect(restored.status == 200, "\(String(describing: restored.json))")
                let summary = try #require(restored.json?["restored"] as? [String: Any])
                #expect(summary["notifications"] as? Int == 3)
                let report = try #require(summary["providerKeys"] as? [String: Any])
                #expect(report["configured"] as? [String] == [testKeyID])
                #expect(report["notConfigured"] as? [String] == ["FOREIGNKEY"])
                #expect((summary["webhooksWithNewSecret"] as? [String])?.count == 1, "secrets are not in the document")

                var paths = ["/api/v1/devices", "/api/v1/apps", "/api/v1/webhooks", "/api/v1/notifications"]
                let list = try #require(try await apiRequest("GET", "\(base)/api/v1/notifications").json?["notifications"] as? [[String: Any]])
                for notification in list {
                    let id = try #require(notification["apnsId"] as? String)
                    let device = try #require(notification["deviceToken"] as? String)
                    paths.append("/api/v1/notifications/\(id)?device=\(device)")
                }
                for token in [seededToken, offline] { paths.append("/api/v1/devices/\(token)/notification-center") }
                for path in paths {
                    let (a, b) = (try await apiValue(base, path), try await apiValue(target.httpBase, path))
                    #expect(a.isEqual(b), "\(path) differs:\n\(a)\n\(b)")
                }
                var again = try #require(jsonObject(try await curl(["\(target.httpBase)/api/v1/snapshot?notifications=true&secrets=true"]).stdout))
                var first = try #require(jsonObject(exported.stdout))
                // Readings of the time, not state: when each document was taken, and the (real) clock's now.
                for key in ["takenAt", "clock"] {
                    again[key] = nil
                    first[key] = nil
                }
                #expect((again as NSDictionary).isEqual(to: first), "the restored server's snapshot is the same document")

                #expect(try await apiRequest("PATCH", "\(target.httpBase)/api/v1/devices/\(offline)", #"{"online":true}"#).status == 200)
                let shown = try await apiRequest("GET", "\(target.httpBase)/api/v1/notifications/wait?device=\(offline)&status=displayed&count=1&timeout=5")
                #expect(shown.status == 200, "the restored stored notification is delivered")
            }
        }
    }

    /// A bad document changes nothing, and the error names the path of the bad field.
    @Test func badSnapshotChangesNothingAndNamesTheField() async throws {
        try await withSeededServer { server in
            let base = server.httpBase
            let participant = CounterParticipant()
            server.server.steering.register(participant)
            participant.value = 7
            #expect(try await pushStatus(server, token: seededToken) == 200)
            let before = try await ["/api/v1/devices", "/api/v1/apps", "/api/v1/notifications"].asyncMap { try await apiValue(base, $0) }
            let good = #"{"token":"\#(String(repeating: "ab", count: 16))"}"#
            let cases: [(body: String, status: Int, names: String)] = [
                (#"{"version":1,"devices":[\#(good),\#(good.replacingOccurrences(of: "ab", with: "cd")),{"token":"nothex"}]}"#, 422, "devices[2].token"),
                (#"{"version":1,"devices":[\#(good),\#(good)]}"#, 422, "devices[1].token"),
                (#"{"version":1,"apps":[{"bundleId":"a.b","teamId":"T","colour":"red"}]}"#, 422, "apps[0].colour"),
                (#"{"version":1,"notifications":[{"apnsId":"x"}]}"#, 422, "notifications[0].deviceToken"),
                (#"{"version":1,"webhooks":[{"id":"w","url":"ftp://x"}]}"#, 422, "webhooks[0]"),
                (#"{"version":1,"counter":{"value":-1}}"#, 422, "counter.value"),
                (#"{"version":1,"faults":{}}"#, 422, "faults"),
                (#"{"version":1,"apps":[{"bundleId":"a.b","teamId":"T","serviceExtension":{"kind":"exec","path":"/bin/sh"}}]}"#, 403, "apps[0].serviceExtension"),
                (#"{"devices":[]}"#, 422, "version"),
                (#"{"version":1,"devices":[}"#, 400, "JSON"),
            ]
            for (body, status, names) in cases {
                let answer = try await apiPost(base, "/api/v1/snapshot", body)
                let message = (answer.json?["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(answer.status == status, "\(body): \(String(describing: answer.json))")
                #expect(message.contains(names), "\(body): \(message)")
            }
            let after = try await ["/api/v1/devices", "/api/v1/apps", "/api/v1/notifications"].asyncMap { try await apiValue(base, $0) }
            #expect(zip(before, after).allSatisfy { $0.isEqual($1) }, "nothing changed")
            #expect(participant.value == 7 && participant.restores == 0 && participant.resets.isEmpty)
        }
    }

    /// A participant registered with one line takes part: every reset calls it with its scope, a snapshot
    /// carries its section, a restore validates and restores the section (or resets it when absent).
    @Test func participantTakesPartInResetsAndSnapshots() async throws {
        try await withSeededServer { server in
            let base = server.httpBase
            let participant = CounterParticipant()
            server.server.steering.register(participant)
            participant.value = 5
            let snapshot = try #require(jsonObject(try await curl(["\(base)/api/v1/snapshot"]).stdout))
            #expect((snapshot["counter"] as? [String: Any])?["value"] as? Int == 5)

            let reset = try await apiPost(base, "/api/v1/reset", #"{"deviceToken":"\#(seededToken)"}"#)
            // The server's own participants (faults, the clock) come first.
            #expect((reset.json?["reset"] as? [String: Any])?["participants"] as? [String] == ["faults", "clock", "counter"])
            #expect(participant.resets == [.device(seededToken)] && participant.value == 5)
            #expect(try await apiPost(base, "/api/v1/reset", #"{"bundleId":"\#(testTopic)"}"#).status == 200)
            #expect(try await apiPost(base, "/api/v1/reset", #"{"teamId":"\#(testTeamID)"}"#).status == 200)
            #expect(try await apiPost(base, "/api/v1/reset").status == 200)
            #expect(participant.resets == [.device(seededToken), .app(testTopic), .team(testTeamID), .all])
            #expect(participant.value == 0)

            let restored = try await apiPost(base, "/api/v1/snapshot", #"{"version":1,"counter":{"value":9}}"#)
            #expect((restored.json?["restored"] as? [String: Any])?["sections"] as? [String] == ["counter"])
            #expect(participant.value == 9 && participant.restores == 1)
            #expect(try await apiPost(base, "/api/v1/snapshot", #"{"version":1}"#).status == 200)
            #expect(participant.value == 0 && participant.resets.last == .all, "no section: reset")
        }
    }
}

/// A flag one task sets and another reads.
final class Flag: Sendable {
    private let value = Locked(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

extension Array {
    /// `map` with an async transform, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
