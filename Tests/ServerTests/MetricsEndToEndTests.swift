// APNs Sandbox — GET /metrics after a scripted run: exact counter deltas, and text that a real parser reads.
import Foundation
@testable import Server
import TestProcessSupport
import Testing
import Webhooks

/// A real server on a frozen virtual clock runs a known script — accepted pushes over h2c, HTTP/1.1 and h2 (TLS),
/// with a push type, to production; rejections, a fault rule's answer, a push held by a latency rule, an extension
/// that times out, a webhook retry — and `/metrics`, scraped before, during and after
/// and parsed each time by `prometheus_client` (Tests/Python/metrics_scrape.py), moves by exactly that much.
@Suite(.scaledTimeLimit(minutes: 1))
struct MetricsEndToEndTests {
    struct Scrape {
        var contentType: String
        var families: [String: String]
        var samples: [String: Double]

        func value(_ key: String) -> Double { samples[key] ?? 0 }
    }

    /// Scrapes and parses `/metrics` with the Prometheus Python client (fails the test when it does not parse).
    private func scrape(_ server: TestServer) async throws -> Scrape {
        let output = try await run("/usr/bin/env", args: [
            "python3", TestPaths.packageRoot + "/Tests/Python/metrics_scrape.py", "--url", "\(server.httpBase)/metrics",
        ], timeout: 20)
        try #require(output.status == 0, "\(output)")
        let json = try #require(jsonObject(output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""), "\(output)")
        let samples = (json["samples"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.doubleValue }
        return Scrape(
            contentType: json["contentType"] as? String ?? "", families: json["families"] as? [String: String] ?? [:],
            samples: samples)
    }

    /// Every sample that changed between two scrapes, by how much (process, file and commit-time samples left out).
    private func deltas(_ before: Scrape, _ after: Scrape) -> [String: Double] {
        var changed: [String: Double] = [:]
        for key in Set(before.samples.keys).union(after.samples.keys) {
            let delta = after.value(key) - before.value(key)
            if delta != 0 { changed[key] = delta }
        }
        return changed.filter { key, _ in
            !["apns_sandbox_process_", "apns_sandbox_database_size_bytes", "apns_sandbox_store_commit_duration_seconds"]
                .contains { key.hasPrefix($0) }
        }
    }

    /// One push with curl (h2c, HTTP/1.1, or h2 over TLS with the server's CA); its status and `reason`.
    private func push(
        _ server: TestServer, http1: Bool = false, tls: Bool = false, device: String = deviceToken,
        topic: String = testTopic, authorization: String? = nil, headers: [String] = [],
        payload: String = #"{"aps":{"alert":"Hi"}}"#
    ) async throws -> (status: Int, reason: String, apnsID: String) {
        let target = tls
            ? ["--http2", "--cacert", server.caPath] + server.curlResolve + ["\(server.tlsBase)/3/device/\(device)"]
            : [http1 ? "--http1.1" : "--http2-prior-knowledge", "\(server.httpBase)/3/device/\(device)"]
        let output = try await curl(target + [
            "-D", "-", "-X", "POST", "-H", authorization ?? server.authorizationHeader, "-H", "apns-topic: \(topic)",
        ] + headers.flatMap { ["-H", $0] } + ["-d", payload])
        let response = try #require(CurlResponse(output.stdout), "\(output)")
        return (response.status, jsonObject(response.body)?["reason"] as? String ?? "", response.header("apns-id") ?? "")
    }

    private func waitUntilFinal(_ server: TestServer, _ apnsID: String) async throws -> [String: Any] {
        let answer = try await apiRequest("GET", "\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=5")
        return try #require(answer.json, "no record \(apnsID)")
    }

    /// Polls `condition` every 20 ms for up to 30 s (real time, scaled: it returns as soon as it holds).
    private func until(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = monotonicSeconds() + TestTime.seconds(30)
        while try await !condition() {
            guard monotonicSeconds() < deadline else { throw ProcessError("timed out waiting for \(what)") }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    @Test func scrapedCountersMoveByExactlyTheScriptedRun() async throws {
        let secret = WebhookSignature.generateSecret()
        let receiver = try await WebhookReceiver(secret: secret, failFirst: 1)
        try await withServer(configure: { configuration in
            configuration.clock = ClockSettings(virtual: true, frozen: true)
            configuration.webhooks.retryScheduleMilliseconds = [0, 60_000]
            configuration.webhooks.jitter = 0
        }) { server in
            let before = try await scrape(server)
            #expect(before.contentType == "text/plain; version=0.0.4; charset=utf-8")
            #expect(before.value(#"apns_sandbox_build_info{version="\#(SandboxServer.version)"}"#) == 1)
            // The parser names a counter's family without `_total`.
            #expect(before.families["apns_sandbox_pushes"] == "counter", "\(before.families)")
            #expect(before.families["apns_sandbox_extension_duration_seconds"] == "histogram")
            #expect(before.families["apns_sandbox_provider_pushes_waiting"] == "gauge")
            #expect(before.value("apns_sandbox_process_resident_memory_bytes") > 1_000_000)
            #expect(before.value("apns_sandbox_process_threads") > 1 && before.value("apns_sandbox_process_open_fds") > 3)
            #expect(before.value(#"apns_sandbox_database_size_bytes{database="store",file="main"}"#) > 0)

            // Three accepted pushes: two over h2c, one over HTTP/1.1.
            var accepted: [String] = []
            for http1 in [false, false, true] {
                let reply = try await push(server, http1: http1)
                #expect(reply.status == 200, "\(reply)")
                accepted.append(reply.apnsID)
            }
            // One with `apns-push-type: alert`; one to the production host (`:authority` api.push.apple.com selects
            // production; a new token is registered there, the first one is a development device); one over TLS (h2).
            let alert = try await push(server, headers: ["apns-push-type: alert"])
            let production = try await push(
                server, device: String(repeating: "cd", count: 32), headers: ["host: api.push.apple.com"])
            let overTLS = try await push(server, tls: true)
            for reply in [alert, production, overTLS] {
                #expect(reply.status == 200, "\(reply)")
                accepted.append(reply.apnsID)
            }
            for apnsID in accepted { _ = try await waitUntilFinal(server, apnsID) }
            // Three rejections over h2c.
            let badToken = try await push(server, device: "not-a-token")
            #expect(badToken.status == 400 && badToken.reason == "BadDeviceToken", "\(badToken)")
            let badTopic = try await push(server, topic: "com.example.other")
            #expect(badTopic.status == 400, "\(badTopic)")
            let badAuth = try await push(server, authorization: "authorization: bearer not.a.jwt")
            #expect(badAuth.status == 403 && badAuth.reason == "InvalidProviderToken", "\(badAuth)")
            // A fault rule answers one push 503.
            let rule = try await apiRequest("POST", "\(server.httpBase)/api/v1/faults",
                #"{"action":{"reject":{"reason":"ServiceUnavailable"}},"count":1}"#)
            #expect(rule.status == 201, "\(String(describing: rule.json))")
            let faulted = try await push(server)
            #expect(faulted.status == 503 && faulted.reason == "ServiceUnavailable", "\(faulted)")
            // A latency rule holds one push (real time): the scrape meanwhile sees it waiting.
            let slow = try await apiRequest("POST", "\(server.httpBase)/api/v1/faults",
                #"{"latency":{"fixedMilliseconds":4000},"count":1}"#)
            #expect(slow.status == 201, "\(String(describing: slow.json))")
            let held = Task { try await push(server) }
            var holding = try await scrape(server)
            try await until("the held push to be waiting") {
                holding = try await scrape(server)
                return holding.value("apns_sandbox_provider_pushes_waiting") == 1
            }
            #expect(holding.value("apns_sandbox_provider_pushes_waiting") == 1)
            let released = try await held.value
            #expect(released.status == 200, "\(released)")
            _ = try await waitUntilFinal(server, released.apnsID)

            // An extension that hangs ends original-timeout when the clock moves 31 s (30 s budget, 1 s grace).
            let configured = try await apiRequest(
                "PATCH", "\(server.httpBase)/api/v1/apps/\(testTopic)",
                #"{"serviceExtension":{"kind":"builtin","steps":[{"step":"simulate","behavior":"hang"}]}}"#)
            #expect(configured.status == 200, "\(String(describing: configured.json))")
            let mutable = try await push(server, payload: #"{"aps":{"alert":{"title":"Hi","body":"b"},"mutable-content":1}}"#)
            #expect(mutable.status == 200, "\(mutable)")
            try await until("the extension to run") { server.server.extensions.runningInstanceCount == 1 }
            _ = try await apiRequest("POST", "\(server.httpBase)/api/v1/clock/advance", #"{"seconds":31}"#)
            #expect(try await waitUntilFinal(server, mutable.apnsID)["outcome"] as? String == "original-timeout")

            // A webhook whose first attempt fails: one retry waits in the backlog until the clock reaches it.
            let created = try await apiRequest("POST", "\(server.httpBase)/api/v1/webhooks",
                #"{"url":"\#(receiver.url)","secret":"\#(secret)","events":["notification.displayed"]}"#)
            #expect(created.status == 201, "\(String(describing: created.json))")
            let hooked = try await push(server)
            #expect(hooked.status == 200, "\(hooked)")
            try await receiver.waitFor { $0.count == 1 }
            var during = try await scrape(server)
            try await until("the failed attempt in the backlog") {
                during = try await scrape(server)
                return during.value("apns_sandbox_webhook_retry_backlog") == 1
            }
            #expect(during.value(#"apns_sandbox_webhook_attempts_total{outcome="retry"}"#) == 1)
            let stream = try SSEClient("\(server.httpBase)/api/v1/events")
            defer { stream.stop() }
            try await stream.waitUntilConnected()
            _ = try await apiRequest("POST", "\(server.httpBase)/api/v1/clock/advance", #"{"seconds":60}"#)
            try await receiver.waitFor { $0.count == 2 }
            var after = try await scrape(server)
            try await until("the retry's result") {
                after = try await scrape(server)
                return after.value(#"apns_sandbox_webhook_attempts_total{outcome="succeeded"}"#) == 1
                    && after.value("apns_sandbox_webhook_retry_backlog") == 0
                    && after.value("apns_sandbox_provider_connections_open") == 0  // curl's connections are gone
                    && after.value("apns_sandbox_provider_pushes_waiting") == 0
            }

            let pushes = "apns_sandbox_pushes_total{environment=\"development\",push_type=\"none\","
            let expected: [String: Double] = [
                // Two plain, the held one, the extension's and the webhook's.
                pushes + #"reason="",status="200",transport="h2c"}"#: 5,
                pushes + #"reason="",status="200",transport="http1.1"}"#: 1,
                pushes + #"reason="",status="200",transport="h2"}"#: 1,
                #"apns_sandbox_pushes_total{environment="development",push_type="alert",reason="",status="200",transport="h2c"}"#: 1,
                #"apns_sandbox_pushes_total{environment="production",push_type="none",reason="",status="200",transport="h2c"}"#: 1,
                pushes + #"reason="BadDeviceToken",status="400",transport="h2c"}"#: 1,
                pushes + #"reason="\#(badTopic.reason)",status="400",transport="h2c"}"#: 1,
                pushes + #"reason="InvalidProviderToken",status="403",transport="h2c"}"#: 1,
                pushes + #"reason="ServiceUnavailable",status="503",transport="h2c"}"#: 1,
                #"apns_sandbox_faults_applied_total{action="reject"}"#: 1,
                #"apns_sandbox_faults_applied_total{action="latency"}"#: 1,
                #"apns_sandbox_provider_auth_failures_total{reason="InvalidProviderToken"}"#: 1,
                // Every connection whose push reached authentication (the bad device token is refused before).
                "apns_sandbox_provider_connections_total": 12,
                #"apns_sandbox_notifications_final_total{status="displayed"}"#: 9,
                #"apns_sandbox_extension_runs_total{kind="builtin",outcome="original-timeout"}"#: 1,
                // 31 s of virtual time: over the 30 s bucket, in the 60 s one.
                #"apns_sandbox_extension_duration_seconds_bucket{kind="builtin",le="60"}"#: 1,
                #"apns_sandbox_extension_duration_seconds_bucket{kind="builtin",le="+Inf"}"#: 1,
                #"apns_sandbox_extension_duration_seconds_count{kind="builtin"}"#: 1,
                #"apns_sandbox_extension_duration_seconds_sum{kind="builtin"}"#: 31,
                #"apns_sandbox_webhook_attempts_total{outcome="retry"}"#: 1,
                #"apns_sandbox_webhook_attempts_total{outcome="succeeded"}"#: 1,
                "apns_sandbox_sse_subscribers": 1,
            ]
            let changed = deltas(before, after)
            #expect(changed == expected, "\(changed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" })")
            #expect(badTopic.reason == "DeviceTokenNotForTopic")
            let commits = #"apns_sandbox_store_commit_duration_seconds_count{database="store"}"#
            #expect(after.value(commits) > before.value(commits), "the pushes' commits are timed")
            for status in ["accepted", "stored", "delivering", "extension-running"] {
                #expect(after.value(#"apns_sandbox_delivery_queue_depth{status="\#(status)"}"#) == 0)
            }
        }
    }

    /// With the admin token required, `/metrics` is on the admin side: 401 without it, 200 with it as a bearer
    /// token or as the Basic password (what Prometheus' `authorization` and `basic_auth` send).
    @Test func metricsNeedTheAdminTokenWhenOneIsRequired() async throws {
        let token = "metrics-admin-token-0123456789"
        try await withServer(configure: { $0.admin.authentication = .required; $0.admin.token = token }) { server in
            let url = "\(server.httpBase)/metrics"
            let status = ["-o", "/dev/null", "-w", "%{http_code}", url]
            let without = try await curl(status).stdoutText
            let bearer = try await curl(["-H", "authorization: Bearer \(token)"] + status).stdoutText
            let basic = try await curl(["-u", "admin:\(token)"] + status).stdoutText
            let body = try await curl(["-H", "authorization: Bearer \(token)", url]).stdoutText
            #expect(without == "401" && bearer == "200" && basic == "200", "\(without) \(bearer) \(basic)")
            #expect(body.contains("# TYPE apns_sandbox_pushes_total counter"))
        }
    }
}
