// APNs Sandbox — end to end: the event stream (SSE) over HTTP/1.1 and HTTP/2, filters, heartbeats, resume.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 2))
struct EventsEndToEndTests {
    /// An HTTP/1.1 stream gets every event (accepted, displayed, rejected with its reason) with
    /// increasing ids and the envelope; an h2c stream filtered to `notification.displayed` gets only those;
    /// both get heartbeats.
    @Test func streamsOverBothProtocolsWithFilters() async throws {
        try await withServer(configure: { $0.events.heartbeatSeconds = 0.2 }) { server in
            let all = try SSEClient("\(server.httpBase)/api/v1/events", ["--http1.1"])
            let displayed = try SSEClient("\(server.httpBase)/api/v1/events?type=notification.displayed", ["--http2-prior-knowledge"])
            try await all.waitUntilConnected()
            try await displayed.waitUntilConnected()
            let id = try await pushAlert(server)
            #expect(!id.isEmpty)
            let rejected = try await curl([
                "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                "\(server.httpBase)/3/device/\(deviceToken)", "-H", server.authorizationHeader, "-d", #"{"aps":{}}"#,
            ])
            #expect(rejected.stdoutText == "400", "a push without apns-topic is rejected: \(rejected)")

            let events = try await all.waitFor { events in
                events.contains { $0.event == "notification.displayed" } && events.contains { $0.event == "push.rejected" }
            }
            let ours = events.filter { $0.apnsID == id }.map { $0.event ?? "" }
            #expect(ours == ["push.accepted", "notification.displayed"], "\(all.text)")
            let ids = events.compactMap(\.id)
            #expect(ids.count == events.count && ids == ids.sorted() && Set(ids).count == ids.count)
            for event in events {
                let envelope = try #require(event.json)
                #expect(envelope["id"] as? String == "evt_\(event.id ?? -1)")
                #expect(envelope["type"] as? String == event.event)
                #expect((envelope["timestamp"] as? String)?.hasSuffix("Z") == true)
            }
            let rejection = try #require(events.first { $0.event == "push.rejected" }?.json?["data"] as? [String: Any])
            #expect(rejection["reason"] as? String == "MissingTopic")
            #expect(rejection["status"] as? Int == 400)

            let filtered = try await displayed.waitFor { $0.contains { $0.apnsID == id } }
            #expect(filtered.map { $0.event ?? "" } == ["notification.displayed"], "\(displayed.text)")
            let content = (filtered.first?.json?["data"] as? [String: Any])?["displayed"] as? [String: Any]
            #expect(content?["body"] as? String == "Hi")
            // Heartbeats are real time (every 0.2 s here): wait for one on each stream, not a fixed 0.5 s that a
            // loaded machine may not give the server's loop.
            let deadline = monotonicSeconds() + TestTime.seconds(15)
            while !(all.text.contains(": heartbeat") && displayed.text.contains(": heartbeat")), monotonicSeconds() < deadline {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            #expect(all.text.contains(": heartbeat") && displayed.text.contains(": heartbeat"))
        }
    }

    /// A client that reconnects with `Last-Event-ID` gets exactly the events after that id: those logged
    /// while it was away and the live ones after, in order, without gaps or duplicates.
    @Test func resumeWithLastEventIDMissesNothing() async throws {
        try await withServer { server in
            let first = try SSEClient("\(server.httpBase)/api/v1/events", ["--http2-prior-knowledge"])
            try await first.waitUntilConnected()
            var before: [String] = []
            for _ in 0..<3 { before.append(try await pushAlert(server)) }
            let seen = try await first.waitFor { events in
                before.allSatisfy { id in events.contains { $0.apnsID == id && $0.event == "notification.displayed" } }
            }
            first.stop()
            let lastID = try #require(seen.compactMap(\.id).max())

            var later: [String] = []
            for _ in 0..<10 { later.append(try await pushAlert(server)) }
            let resumed = try SSEClient("\(server.httpBase)/api/v1/events", ["--http1.1", "-H", "Last-Event-ID: \(lastID)"])
            try await resumed.waitUntilConnected()
            for _ in 0..<3 { later.append(try await pushAlert(server)) }
            #expect(!later.contains(""))

            let events = try await resumed.waitFor { events in
                later.allSatisfy { id in events.contains { $0.apnsID == id && $0.event == "notification.displayed" } }
            }
            let ids = events.compactMap(\.id)
            let expected = Array((lastID + 1)...(ids.max() ?? lastID))
            #expect(ids == expected, "ids after \(lastID) must be contiguous, once each: \(ids)")
            for id in later {
                #expect(events.filter { $0.apnsID == id }.map { $0.event ?? "" } == ["push.accepted", "notification.displayed"])
            }
            #expect(!events.contains { before.contains($0.apnsID ?? "") }, "nothing at or before Last-Event-ID is repeated")
        }
    }

    /// A filtered stream resumed from the start of the log gets the matching events and then goes live
    /// even when the newest events do not match (it once kept re-reading the log at full speed).
    @Test func filteredResumeCatchesUpAndGoesLive() async throws {
        try await withServer { server in
            let first = try await pushAlert(server)
            // The newest events are device.updated ones, which the filter below does not match.
            for _ in 0..<3 {
                let created = try await apiRequest("POST", "\(server.httpBase)/api/v1/devices", #"{"apps":["\#(testTopic)"]}"#)
                #expect(created.status == 201)
            }
            let stream = try SSEClient("\(server.httpBase)/api/v1/events?type=push.accepted", ["-H", "Last-Event-ID: 0"])
            try await stream.waitUntilConnected()
            #expect(try await stream.waitFor { $0.contains { $0.apnsID == first } }.map { $0.event ?? "" } == ["push.accepted"])
            // Caught up: the catch-up thread ends (it would spin while the stream never went live).
            // Polled until gone, within a generous real-time deadline: a loaded machine may take seconds to end the
            // thread, while one that spins never ends it.
            try await pollUntil("the catch-up thread to end (a stream is still catching up)") { Self.catchUpThreads() == 0 }
            let live = try await pushAlert(server)
            let events = try await stream.waitFor { $0.contains { $0.apnsID == live } }
            #expect(events.compactMap(\.apnsID) == [first, live], "\(stream.text)")
        }
    }

    /// Threads of this process named `sse-catch-up`.
    private static func catchUpThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix("sse-catch-up") == true
        }.count
    }

    /// Bad filters and ids are answered 400 with the JSON problem, not a stream.
    @Test func rejectsBadParameters() async throws {
        try await withServer { server in
            let badType = try await apiRequest("GET", "\(server.httpBase)/api/v1/events?type=push.nope")
            #expect(badType.status == 400)
            #expect((badType.json?["error"] as? [String: Any])?["code"] as? String == "invalid_parameter")
            let badID = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Last-Event-ID: yesterday",
                                        "\(server.httpBase)/api/v1/events"])
            #expect(badID.stdoutText == "400")
        }
    }

    /// Shutting the server down ends open streams instead of waiting for them (the drain stays short).
    /// A grace of 30 s against a bound of 15: a shutdown took 5.7 s once in a loaded CI run of the suite.
    @Test func shutdownEndsStreams() async throws {
        try await withServer(configure: { $0.limits.shutdownGraceSeconds = 30 }) { server in
            let stream = try SSEClient("\(server.httpBase)/api/v1/events", ["--http2-prior-knowledge"])
            let stream1 = try SSEClient("\(server.httpBase)/api/v1/events", ["--http1.1"])
            try await stream.waitUntilConnected()
            try await stream1.waitUntilConnected()
            let seconds = await server.shutdown()
            #expect(seconds < 15, "shutdown waited \(seconds) s for open event streams")
        }
    }
}
