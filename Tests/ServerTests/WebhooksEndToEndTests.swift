// APNs Sandbox — end to end: webhooks to a real receiver that verifies Standard Webhooks signatures.
import Foundation
import Crypto
import Glibc
import TestProcessSupport
import Testing
import Webhooks

@Suite(.scaledTimeLimit(minutes: 3))
struct WebhooksEndToEndTests {
    /// A receiver that fails twice then succeeds gets the same signed message three times (each
    /// signature valid per the reference library) and then nothing more; the delivery log shows one
    /// delivery, `succeeded`, with three attempts (500, 500, 200).
    @Test func retriesUntilSuccessAndLogsEveryAttempt() async throws {
        let secret = WebhookSignature.generateSecret()
        let receiver = try await WebhookReceiver(secret: secret, failFirst: 2)
        try await withServer(configure: { configuration in
            configuration.webhooks.retryScheduleMilliseconds = [0, 100, 100, 100]
            configuration.webhooks.jitter = 0
        }) { server in
            let created = try await apiRequest("POST", "\(server.httpBase)/api/v1/webhooks",
                #"{"url":"\#(receiver.url)","secret":"\#(secret)","events":["notification.displayed"]}"#)
            #expect(created.status == 201, "\(String(describing: created.json))")
            let webhookID = try #require(created.json?["id"] as? String)
            let apnsID = try await pushAlert(server)

            let requests = try await receiver.waitFor { $0.contains { $0.answered == 200 } }
            try await Task.sleep(nanoseconds: 600_000_000)
            let all = receiver.requests
            #expect(all.map(\.answered) == [500, 500, 200], "\(all)")
            #expect(all.allSatisfy { $0.valid }, "every attempt is signed afresh and verifies")
            #expect(Set(all.map(\.messageID)).count == 1 && requests.first?.type == "notification.displayed")
            #expect(all.first?.apnsID == apnsID)

            let log = try await apiRequest("GET", "\(server.httpBase)/api/v1/webhooks/\(webhookID)/deliveries")
            let deliveries = try #require(log.json?["deliveries"] as? [[String: Any]])
            #expect(deliveries.count == 1)
            let delivery = try #require(deliveries.first)
            #expect(delivery["status"] as? String == "succeeded")
            #expect(delivery["attemptCount"] as? Int == 3)
            let attempts = try #require(delivery["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["statusCode"] as? Int } == [500, 500, 200])
            #expect(attempts.allSatisfy { $0["durationMs"] as? Double != nil })
            #expect(delivery["messageId"] as? String == all.first?.messageID)
        }
    }

    /// The delivery log shows the event's payload even when the push's payload uses all the nesting
    /// APNs' rules allow (the envelope adds levels around it).
    @Test func deliveryLogShowsDeeplyNestedPayloads() async throws {
        let deadPort = try RawSocket.freePort()
        try await withServer(configure: { configuration in
            configuration.webhooks.retryScheduleMilliseconds = [60_000]
        }) { server in
            let created = try await apiRequest("POST", "\(server.httpBase)/api/v1/webhooks",
                #"{"url":"http://127.0.0.1:\#(deadPort)/hook","events":["push.accepted"]}"#)
            let webhookID = try #require(created.json?["id"] as? String, "\(String(describing: created.json))")
            // The root object, "d" and 62 arrays: 64 levels, the most a payload may have.
            let deep = #"{"aps":{"alert":"x"},"d":"# + String(repeating: "[", count: 62) + String(repeating: "]", count: 62) + "}"
            let apnsID = try await pushAlert(server, body: deep)
            #expect(!apnsID.isEmpty)
            let payload = try await pollFor("a delivery with a payload") {
                let log = try await apiRequest("GET", "\(server.httpBase)/api/v1/webhooks/\(webhookID)/deliveries")
                return (log.json?["deliveries"] as? [[String: Any]])?.first?["payload"] as? [String: Any]
            }
            let data = try #require((payload["data"] as? [String: Any]), "no data in the payload: \(payload)")
            #expect(data["apnsId"] as? String == apnsID)
            #expect((data["payload"] as? [String: Any])?["d"] is [Any])
        }
    }

    /// The API validates subscriptions, sends test messages, replays a delivery with the same
    /// `webhook-id`, and deletes; an endpoint that never answers opens its circuit breaker.
    @Test func subscriptionAPITestReplayDeleteAndBreaker() async throws {
        let secret = WebhookSignature.generateSecret()
        let receiver = try await WebhookReceiver(secret: secret)
        let deadPort = try RawSocket.freePort()
        try await withServer(configure: { configuration in
            configuration.webhooks.retryScheduleMilliseconds = [0, 50, 50, 50, 50, 50, 50, 50]
            configuration.webhooks.breakerFailureThreshold = 2
            configuration.webhooks.breakerCooldownMilliseconds = 60_000
        }) { server in
            let base = "\(server.httpBase)/api/v1/webhooks"
            for body in [#"{"url":"ftp://x/"}"#, #"{"url":"http://127.0.0.1:1/","events":["push.nope"]}"#,
                         #"{"url":"http://127.0.0.1:1/","secret":"whsec_short"}"#] {
                let refused = try await apiRequest("POST", base, body)
                #expect(refused.status == 422, "\(body): \(String(describing: refused.json))")
            }
            #expect(try await apiRequest("POST", base, "[]").status == 400)

            let created = try await apiRequest("POST", base, #"{"url":"\#(receiver.url)","secret":"\#(secret)"}"#)
            let id = try #require(created.json?["id"] as? String)
            #expect(created.json?["secret"] as? String == secret)
            #expect(created.json?["circuit"] as? String == "closed")
            let generated = try await apiRequest("POST", base, #"{"url":"http://127.0.0.1:\#(deadPort)/","events":["push.accepted"]}"#)
            let deadID = try #require(generated.json?["id"] as? String)
            #expect((generated.json?["secret"] as? String)?.hasPrefix("whsec_") == true)
            let listed = try await apiRequest("GET", base)
            #expect((listed.json?["webhooks"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted() == [id, deadID].sorted())

            let test = try await apiRequest("POST", "\(base)/\(id)/test")
            #expect(test.status == 202)
            let testMessage = try await receiver.waitFor { $0.contains { $0.type == "webhook.test" } }.first { $0.type == "webhook.test" }
            #expect(testMessage?.valid == true)

            // The receiver has answered; the result is written a moment later (real time: the dispatcher's batching).
            let succeeded = try await pollFor("the test message's delivery to succeed") {
                let deliveries = try await apiRequest("GET", "\(base)/\(id)/deliveries?status=succeeded")
                return (deliveries.json?["deliveries"] as? [[String: Any]])?.first?["id"] as? Int
            }
            let replayed = try await apiRequest("POST", "\(base)/\(id)/deliveries/\(succeeded)/replay")
            #expect(replayed.status == 202)
            let again = try await receiver.waitFor { $0.filter { $0.type == "webhook.test" }.count == 2 }
            #expect(Set(again.filter { $0.type == "webhook.test" }.map(\.messageID)).count == 1, "a replay keeps the webhook-id")
            #expect(try await apiRequest("POST", "\(base)/\(id)/deliveries/999999/replay").status == 404)

            // The dead endpoint: two failures in a row open the breaker.
            for _ in 0..<2 { _ = try await pushAlert(server) }
            try await pollUntil("the dead endpoint's circuit to open") {
                try await apiRequest("GET", "\(base)/\(deadID)").json?["circuit"] as? String == "open"
            }
            let pending = try await apiRequest("GET", "\(base)/\(deadID)/deliveries?status=pending")
            #expect((pending.json?["deliveries"] as? [[String: Any]])?.count == 2, "nothing is dropped while the circuit is open")

            #expect(try await apiRequest("DELETE", "\(base)/\(id)").status == 204)
            #expect(try await apiRequest("GET", "\(base)/\(id)").status == 404)
            #expect(try await apiRequest("DELETE", "\(base)/\(id)").status == 404)
        }
    }

    /// Deliveries still pending when the server is killed (kill -9) are delivered after the restart,
    /// and events committed but not yet fanned out are not lost either.
    @Test func pendingDeliveriesSurviveKillNine() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("webhook-crash")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let secret = WebhookSignature.generateSecret()
        let receiverPort = try RawSocket.freePort()
        let config = try Self.writeConfiguration(in: dataDirectory, receiverPort: receiverPort, secret: secret)
        let token = try await run(binary, args: ["token", "--config", config]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let base = "http://127.0.0.1:\(port)"
        var pushed: [String] = []
        for _ in 0..<8 {
            pushed.append(try await pushAlert(base: base, authorization: "authorization: bearer \(token)"))
        }
        #expect(!pushed.contains(""))
        // Wait until the receiver (not running yet) has been tried: deliveries are pending with failed attempts.
        try await pollUntil("8 pending deliveries, one of them attempted") {
            let log = try await apiRequest("GET", "\(base)/api/v1/webhooks/wh_crash/deliveries?status=pending")
            let pending = log.json?["deliveries"] as? [[String: Any]] ?? []
            return pending.count >= 8 && pending.contains { ($0["attemptCount"] as? Int ?? 0) > 0 }
        }
        // A few more right before the kill: their events are committed (the pushes got 200) but most
        // likely not fanned out to the subscription yet.
        for _ in 0..<4 {
            pushed.append(try await pushAlert(base: base, authorization: "authorization: bearer \(token)"))
        }
        #expect(pushed.count == 12 && !pushed.contains(""))
        server.send(signal: SIGKILL)
        _ = server.finish(timeout: 10)

        let receiver = try await WebhookReceiver(secret: secret, port: receiverPort)
        let (restarted, _) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        defer {
            restarted.send(signal: SIGTERM)
            _ = restarted.finish(timeout: 10)
        }
        let expected = Set(pushed.flatMap { ["push.accepted:\($0)", "notification.displayed:\($0)"] })
        let requests = try await receiver.waitFor(timeout: TestTime.seconds(30)) { requests in
            expected.isSubset(of: Set(requests.map { "\($0.type):\($0.apnsID ?? "")" }))
        }
        let received = Set(requests.map { "\($0.type):\($0.apnsID ?? "")" })
        #expect(expected.isSubset(of: received), "missing after restart: \(expected.subtracting(received).sorted().prefix(4))")
        #expect(requests.allSatisfy { $0.valid })
    }

    static func writeConfiguration(in directory: String, receiverPort: Int, secret: String) throws -> String {
        try ES256PrivateKey.generate().pkcs8PEM.write(toFile: directory + "/AuthKey.p8", atomically: true, encoding: .utf8)
        let retries = ([0] + Array(repeating: 200, count: 100)).map(String.init).joined(separator: ",")
        let json = """
            {
              "apns": { "streamsBeforeAuthentication": 0 },
              "teams": [ { "teamID": "\(testTeamID)", "keys": [ { "keyID": "\(testKeyID)", "privateKeyFile": "AuthKey.p8" } ],
                           "apps": [ "\(testTopic)" ] } ],
              "webhooks": {
                "retryScheduleMilliseconds": [\(retries)],
                "breakerFailureThreshold": 1000,
                "subscriptions": [ { "id": "wh_crash", "url": "http://127.0.0.1:\(receiverPort)/hook", "secret": "\(secret)",
                                     "events": ["push.accepted", "notification.displayed"] } ]
              }
            }
            """
        let path = directory + "/sandbox.json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
