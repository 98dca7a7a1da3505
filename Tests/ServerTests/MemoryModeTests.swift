// APNs Sandbox — `storage.mode` `memory` (the load-test mode) end to end: a bounded journal, drops counted, the
// same API, SSE and webhooks over what is kept, nothing on disk, nothing after a restart.
import Foundation
import Server
import Testing

@Suite struct MemoryModeTests {
    private static let secret = "whsec_" + Data("memory-mode-webhook-secret".utf8).base64EncodedString()

    /// 60 pushes from aioapns into a journal of 25 notifications and 40 events: the API lists the newest 25,
    /// `/metrics` counts what went, the live SSE stream and the webhook saw every push, a stream resumed from
    /// before the oldest kept event starts at it, and the data directory holds no database.
    /// The pushes go in four batches of 15 (two events each), each once the webhook has the one before: a
    /// subscription that falls behind by more than the journal holds misses what was dropped (config/README.md,
    /// "The memory mode"), and on a loaded machine the dispatcher's queue can lag 40 events behind 60 pushes
    /// sent at once (it did in 1 of 8 CI runs).
    @Test func boundedJournalServesTheSameAPIEventsAndWebhooks() async throws {
        let receiver = try await WebhookReceiver(secret: Self.secret)
        try await withServer(logLevel: .info, configure: {
            $0.storage.mode = .memory
            $0.storage.memory.notifications = 25
            $0.storage.memory.events = 40
        }) { server in
            let base = server.httpBase
            #expect(server.logSink.capturedLines.contains { $0.contains("STORAGE IN MEMORY") }, "the start says what the mode loses")
            let created = try await apiRequest(
                "POST", base + "/api/v1/webhooks",
                #"{"url":"\#(receiver.url)","secret":"\#(Self.secret)","events":["notification.displayed"]}"#)
            #expect(created.status == 201, "\(created)")
            let live = try SSEClient(base + "/api/v1/events?type=notification.displayed")
            defer { live.stop() }
            try await live.waitUntilConnected()

            for batch in 1...4 {
                let output = try await run("/usr/bin/env", args: [
                    "python3", TestPaths.packageRoot + "/Tests/Python/aioapns_client.py",
                    "--port", String(server.tlsPort), "--cafile", server.caPath, "--server-name", "localhost",
                    "--key-file", server.dataDirectory + "/AuthKey_\(testKeyID).p8", "--key-id", testKeyID,
                    "--team-id", testTeamID, "--topic", testTopic, "--timeout", "25",
                    "--count", "15", "--concurrency", "1", "--token", deviceToken, "--expect-status", "200",
                ], timeout: 40)
                try #require(output.status == 0, "\(output)")
                _ = try await receiver.waitFor { $0.count >= 15 * batch }
            }

            // Every push reached the live stream and the webhook, whatever the journal kept.
            let streamed = try await live.waitFor { $0.count >= 60 }
            #expect(streamed.count == 60)
            let delivered = try await receiver.waitFor { $0.count >= 60 }
            #expect(delivered.count == 60 && delivered.allSatisfy(\.valid), "\(delivered.count) webhook requests")
            let streamedIDs = streamed.compactMap(\.apnsID)
            #expect(Set(delivered.compactMap(\.apnsID)) == Set(streamedIDs))

            // The API: the newest 25, newest first (one push at a time: the stream's order is the push order).
            let listed = try await apiRequest("GET", base + "/api/v1/notifications?limit=100")
            #expect(listed.json?["total"] as? Int == 25, "\(listed)")
            let listedIDs = (listed.json?["notifications"] as? [[String: Any]])?.compactMap { $0["apnsId"] as? String }
            #expect(listedIDs == Array(streamedIDs.suffix(25).reversed()))
            let oldest = try #require(streamedIDs.first)
            #expect(try await apiRequest("GET", base + "/api/v1/notifications/\(oldest)").status == 404)
            let newest = try await apiRequest("GET", base + "/api/v1/notifications/\(try #require(streamedIDs.last))")
            #expect(newest.json?["status"] as? String == "displayed", "\(newest)")

            // The counts: 25 notifications kept and 35 dropped; 40 events kept, the rest (of every event logged) dropped.
            let lastEventID = try #require(streamed.last?.id)
            let metrics = try await curl([base + "/metrics"]).stdoutText
            #expect(metrics.contains(#"apns_sandbox_journal_entries{kind="notifications"} 25"#), "\(metrics)")
            #expect(metrics.contains(#"apns_sandbox_journal_dropped_total{kind="notifications"} 35"#))
            #expect(metrics.contains(#"apns_sandbox_journal_entries{kind="events"} 40"#))
            #expect(metrics.contains(#"apns_sandbox_journal_dropped_total{kind="events"} \#(lastEventID - 40)"#))
            #expect(!metrics.contains("apns_sandbox_database_size_bytes{"), "no database file to report")

            // A stream resumed from before the oldest kept event starts at the oldest kept one.
            let resumed = try SSEClient(base + "/api/v1/events", ["-H", "Last-Event-ID: 1"])
            defer { resumed.stop() }
            let caughtUp = try await resumed.waitFor { $0.last?.id == lastEventID }
            #expect(caughtUp.first?.id == lastEventID - 39)
            #expect(caughtUp.count == 40)

            // Nothing of the journal is on disk.
            let files = try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory)
            #expect(!files.contains { $0.hasSuffix(".sqlite") || $0.contains(".sqlite-") }, "\(files)")
        }
    }

    /// Nothing survives a restart: a second server on the same data directory starts empty, and a reset and a
    /// snapshot work on what is kept.
    @Test func restartStartsEmptyAndResetsWork() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configure: @Sendable (inout SandboxConfiguration) -> Void = { configuration in
            configuration.dataDirectory = directory
            configuration.storage.mode = .memory
        }
        try await withServer(configure: configure) { server in
            for _ in 0..<3 {
                #expect(try await !pushAlert(server).isEmpty)
            }
            let base = server.httpBase + "/api/v1/notifications"
            _ = try await apiRequest("GET", base + "/wait?count=3&timeout=10")
            let snapshot = try await curl([server.httpBase + "/api/v1/snapshot?notifications=true"]).stdoutText
            #expect((jsonObject(snapshot)?["notifications"] as? [Any])?.count == 3, "\(snapshot.prefix(300))")
            let reset = try await apiRequest("POST", server.httpBase + "/api/v1/reset", #"{"deviceToken":"\#(deviceToken)"}"#)
            #expect(reset.status == 200, "\(reset)")
            #expect(try await apiRequest("GET", base).json?["total"] as? Int == 0)
            #expect(try await !pushAlert(server).isEmpty)
        }
        try await withServer(configure: configure) { server in
            let listed = try await apiRequest("GET", server.httpBase + "/api/v1/notifications")
            #expect(listed.json?["total"] as? Int == 0, "\(listed)")
            let devices = try await apiRequest("GET", server.httpBase + "/api/v1/devices")
            #expect(devices.status == 200)
            let tokens = try #require(devices.json?["devices"] as? [[String: Any]], "\(devices)").compactMap { $0["token"] as? String }
            #expect(!tokens.contains(deviceToken), "the pushes' auto-registered device is gone: \(tokens)")
        }
    }
}
