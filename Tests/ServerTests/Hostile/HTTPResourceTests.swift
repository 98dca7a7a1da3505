// APNs Sandbox — hostile peers (issue #11): what one client can make the server hold, and for how long.
import Foundation
import Support
import TestProcessSupport
import Testing

/// Each test starts the real binary, attacks it from a Python peer (Tests/Python/hostile_peer.py) while a
/// well-behaved client (another loopback address) keeps asking for `/healthz` and sending a push, and
/// checks the outcome: the attack's answer, the server's peak RSS against its RSS before (a bound stated
/// per test), that the server's CPU goes idle soon after the attacker leaves, and that the well-behaved
/// client was answered, typically within 100 ms and never stalled, during and after (see
/// ``ProbeReport/expectAnswered(within:stallMilliseconds:_:sourceLocation:)``). The tests run
/// concurrently, one server each.
@Suite(.scaledTimeLimit(minutes: 2))
struct HostileHTTPTests {
    /// The latency every well-behaved request must stay within, during and after an attack (times
    /// ``TestTime/scale`` under a sanitizer).
    static let answerWithinMilliseconds = TestTime.seconds(0.1) * 1000

    /// Runs `attack` with the probe beside it, then checks CPU and a second probe; returns the attack's
    /// report, the RSS before and at peak, and prints the figures.
    /// `attack` gets a function that starts the probe; called with `startsProbe` false, the probe starts
    /// with the attack, else when the attack says (after loading the server with its own traffic).
    private func underAttack(
        _ server: HostileServer, name: String, rssGrowthBoundMB: Double, probeSeconds: Double, startsProbe: Bool = false,
        _ attack: @escaping @Sendable (_ startProbe: @escaping @Sendable () throws -> Void) async throws -> AttackReport
    ) async throws -> AttackReport {
        // Warm up the paths the probe takes (first-use allocations are not the attack's).
        _ = try await server.attack("probe", ["--seconds", "0.3", "--token", server.token, "--device", deviceToken,
                                              "--topic", testTopic, "--source", "127.0.0.9"])
        let before = server.rssMegabytes
        let probe = ProbeSlot()
        let startProbe: @Sendable () throws -> Void = { try probe.start { try server.startProbe(seconds: probeSeconds) } }
        if !startsProbe { try startProbe() }
        let (peak, report) = try await server.peakRSS { try await attack(startProbe) }
        let probeProcess = try #require(probe.process, "\(name): the probe was started")
        let during = try ProbeReport(await offload { probeProcess.finish(timeout: 30) })
        let idleAfter = try await server.secondsUntilIdle()
        let after = try ProbeReport(await run("python3", args: [
            TestPaths.hostilePeer, "probe", "--port", "\(server.port)", "--seconds", "1", "--token", server.token,
            "--device", deviceToken, "--topic", testTopic, "--source", "127.0.0.9",
        ]))
        let afterRSS = server.rssMegabytes
        print("""
            hostile \(name): RSS \(Int(before)) MB before, \(Int(peak)) MB peak, \(Int(afterRSS)) MB after \
            (bound +\(Int(rssGrowthBoundMB)) MB); idle \(idleAfter.map { String(format: "%.2f s", $0) } ?? "never") \
            after the attacker left; probe healthz/push median \(Self.ms(during.medianHealthz))/\(Self.ms(during.medianPush)) \
            worst \(Self.ms(during.worstHealthz))/\(Self.ms(during.worstPush)) ms during, median \
            \(Self.ms(after.medianHealthz))/\(Self.ms(after.medianPush)) worst \(Self.ms(after.worstHealthz))/\
            \(Self.ms(after.worstPush)) ms after; attack: \(report)
            """)
        #expect(server.isRunning, "\(name): the server survived")
        // Under AddressSanitizer RSS is mostly its own (shadow memory, redzones, the 256 MB quarantine of freed
        // blocks): the bounds are the plain build's, where scripts/test checks them.
        if !Sanitizer.address {
            #expect(peak - before <= rssGrowthBoundMB, "\(name): RSS grew from \(before) MB to \(peak) MB")
        }
        #expect(idleAfter != nil, "\(name): the server's CPU went idle (< 10 % of a core) within 5 s of the attacker leaving")
        during.expectAnswered(within: Self.answerWithinMilliseconds, "\(name), during the attack")
        after.expectAnswered(within: Self.answerWithinMilliseconds, "\(name), after the attack")
        return report
    }

    private static func ms(_ value: Double) -> String { String(format: "%.1f", value) }

    /// Three HTTP/1.1 connections each pipeline 1,000 `GET /api/v1/notifications?limit=1000` (~700 KB
    /// each) and never read: each stops at its output budget (4 MiB) instead of producing ~700 MB.
    /// Bound: RSS +100 MB (was +670 MB for one connection).
    @Test func pipelinedRequestsThatAreNeverReadStopAtTheOutputBudget() async throws {
        let server = try await HostileServer.start()
        defer { server.stop() }
        try await server.seedNotifications(count: 300)
        _ = try await underAttack(server, name: "HTTP/1.1 pipelining", rssGrowthBoundMB: 100, probeSeconds: 2.5) { _ in
            let cpuBefore = server.cpuSeconds
            let report = try await server.attack("pipeline", [
                "--connections", "3", "--requests", "1000", "--path", "/api/v1/notifications?limit=1000", "--hold", "2.5",
            ])
            // 3,000 listings would take minutes; a budget's worth per connection is a fraction of a second.
            let work = server.cpuSeconds - cpuBefore
            #expect(work < 10, "CPU used while the attackers held on: \(work) s")
            return report
        }
    }

    /// One h2c connection sends 900 HEADERS+RST_STREAM pairs for a large listing in one write: no
    /// listing runs, and past the reset burst (200) the connection gets GOAWAY ENHANCE_YOUR_CALM.
    /// Bound: RSS +30 MB (was +640 MB, and 40 s of CPU after the client left).
    @Test func rapidResetsRunNothingAndEndTheConnection() async throws {
        let server = try await HostileServer.start(apns: [:])  // APNs' one stream before a valid push
        defer { server.stop() }
        try await server.seedNotifications(count: 300, streams: 1)
        let report = try await underAttack(server, name: "HTTP/2 rapid reset", rssGrowthBoundMB: 30, probeSeconds: 1.5) { _ in
            let cpuBefore = server.cpuSeconds
            let report = try await server.attack("rapid-reset", ["--pairs", "900", "--path", "/api/v1/notifications?limit=1000"])
            let work = server.cpuSeconds - cpuBefore
            #expect(work < 1, "CPU used by 900 reset listings: \(work) s")
            return report
        }
        #expect(report["goaway"] as? Int == 11, "GOAWAY ENHANCE_YOUR_CALM: \(report)")
        #expect(report["goawayDebugData"] as? String == #"{"reason":"TooManyStreamResets"}"#, "\(report)")
        #expect((report["lastStreamID"] as? Int ?? .max) <= 2 * 200 + 1, "cut off after the burst: \(report)")
        #expect(report["responses"] as? Int == 0, "reset streams are not answered: \(report)")
        #expect(report["closedAfter"] is Double, "the server closed the connection: \(report)")
    }

    /// One h2c connection with a zero flow-control window opens 999 streams of a large listing and holds
    /// them: the unsent responses stay within the output budget (plus the few API requests one connection
    /// may run at once), stalled streams are reset after `sendTimeoutSeconds`, and the rest wait unstarted.
    /// Bound: RSS +80 MB (was +780 MB).
    @Test func zeroWindowStreamsHoldOnlyTheOutputBudget() async throws {
        let server = try await HostileServer.start(limits: ["sendTimeoutSeconds": 1])
        defer { server.stop() }
        try await server.seedNotifications(count: 300)
        let report = try await underAttack(server, name: "HTTP/2 zero window", rssGrowthBoundMB: 80, probeSeconds: 3) { _ in
            // Held 8 s: a stalled response is reset 1 s after it stalls, but under a loaded suite (or a sanitizer) the
            // listings themselves can take seconds to start; a 3 s hold once saw no reset at all.
            try await server.attack("zero-window", ["--streams", "999", "--path", "/api/v1/notifications?limit=1000", "--hold", "8"])
        }
        let headers = report["headers"] as? Int ?? 0
        #expect(headers > 0 && headers <= 40, "only a budget's worth of the 999 listings was started: \(report)")
        #expect((report["resets"] as? [String: Int])?["8"] ?? 0 > 0, "stalled responses are reset (CANCEL): \(report)")
        #expect(report["data"] as? Int == 0, "nothing was sent beyond the window: \(report)")
    }

    /// An upload over `maxBodyBytes` is answered 413 at once; the server stops opening the stream's window
    /// and resets the stream (NO_ERROR) after the response; a client that keeps sending DATA on it anyway
    /// gets GOAWAY ENHANCE_YOUR_CALM after the discarded-DATA burst (32 MiB) instead of uploading forever
    /// (it sent 2.9 GB in 30 s). Bound: RSS +30 MB.
    @Test func uploadAfterAnEarly413IsResetAndCutOff() async throws {
        let server = try await HostileServer.start()
        defer { server.stop() }
        let report = try await underAttack(server, name: "HTTP/2 upload after 413", rssGrowthBoundMB: 30, probeSeconds: 2) { _ in
            try await server.attack("upload", ["--path", "/upload", "--body-bytes", "\(4 << 20)", "--seconds", "10"])
        }
        #expect(report["status"] as? String == "413", "\(report)")
        #expect(report["resetCode"] as? Int == 0, "RST_STREAM NO_ERROR after the complete response (RFC 9113 §8.1): \(report)")
        let before = report["sentBeforeReset"] as? Int ?? .max
        #expect(before <= (1 << 20) + (1 << 20) + 65_536, "a flow-controlled client is stopped near maxBodyBytes: \(report)")
        #expect(report["goaway"] as? Int == 11, "GOAWAY ENHANCE_YOUR_CALM: \(report)")
        #expect(report["goawayDebugData"] as? String == #"{"reason":"TooMuchDataOnClosedStreams"}"#, "\(report)")
        let after = report["sentAfterReset"] as? Int ?? .max
        #expect(after <= 64 << 20, "DATA accepted on the reset stream: \(after) bytes")
        #expect((report["closedAfter"] as? Double ?? .infinity) < 5, "\(report)")
    }

    /// One h2c connection opens 500 uploads of 1 MB and never ends them: the connection's window
    /// (`maxRequestBodyBytesPerConnection`, 4 MiB) is all it can make the server buffer; the request
    /// timeout then resets them. A well-behaved client then uploads 36 MB over one connection without
    /// stalling: the window is given back as handlers take bodies. Bound: RSS +60 MB (500 × 1 MB before).
    @Test func bufferedRequestBodiesStayWithinTheConnectionWindow() async throws {
        let server = try await HostileServer.start(limits: ["requestTimeoutSeconds": 1.5])
        defer { server.stop() }
        let report = try await underAttack(server, name: "HTTP/2 request-body hoarding", rssGrowthBoundMB: 60, probeSeconds: 2.5) { _ in
            try await server.attack("body-hoard", ["--streams", "500", "--body-bytes", "1000000", "--path", "/upload", "--hold", "2.5"])
        }
        #expect(report["sentBeforeFirstReset"] as? Int ?? .max <= 4 << 20, "within the connection window: \(report)")
        #expect((report["resets"] as? [String: Int])?["8"] ?? 0 > 0, "unfinished uploads are reset (CANCEL): \(report)")
        let body = server.directory + "/upload.bin"
        try Data(repeating: UInt8(ascii: "x"), count: 600_000).write(to: URL(fileURLWithPath: body))
        let uploads = try await run("h2load", args: [
            "-n", "60", "-c", "1", "-m", "4", "-d", body, "http://127.0.0.1:\(server.port)/upload",
        ], timeout: 20)
        #expect(uploads.stdoutText.contains("60 done"), "36 MB over one connection: \(uploads)")
    }

    /// A connection with no request that sends PING every 0.3 s is still idle: GOAWAY and close after
    /// `idleTimeoutSeconds` (1.5 s here; it stayed open 620 s with 300 s set). Bound: RSS +20 MB.
    @Test func pingsDoNotKeepAnIdleConnectionOpen() async throws {
        let server = try await HostileServer.start(limits: ["idleTimeoutSeconds": 1.5])
        defer { server.stop() }
        let report = try await underAttack(server, name: "HTTP/2 PING keep-alive", rssGrowthBoundMB: 20, probeSeconds: 2) { _ in
            try await server.attack("ping-idle", ["--interval", "0.3", "--seconds", "5"])
        }
        let goaway = report["goawayAfter"] as? Double ?? .infinity
        #expect(goaway >= 1.4 && goaway < 2.6, "GOAWAY at the idle timeout despite PINGs: \(report)")
        #expect((report["closedAfter"] as? Double ?? .infinity) < 3, "and closed: \(report)")
    }

    /// 300 event streams that read nothing from one client: 100 (`maxEventStreamsPerClient`) are served,
    /// the rest get 429 with a JSON error; a second client fills the server's cap (150 here) and then
    /// gets 503. Events then flow (400 pushes with 3 KB payloads) while nobody reads: each stream holds at
    /// most its buffer (`eventStreamBufferBytes`, 256 KiB by default) and as much again in its connection.
    /// Bound: RSS +150 MB for 150 streams (they cost ~4.7 MB each without bound: 300 were 1.4 GB).
    @Test func eventStreamsThatAreNeverReadAreCapped() async throws {
        let server = try await HostileServer.start(limits: ["maxEventStreams": 150])
        defer { server.stop() }
        let report = try await underAttack(
            server, name: "SSE hoarding", rssGrowthBoundMB: 150, probeSeconds: 2, startsProbe: true
        ) { startProbe in
            let first = try server.startAttack("sse-hoard", ["--connections", "300", "--path", "/api/v1/events", "--hold", "5"])
            let one = try await Self.firstReport(of: first)
            let second = try server.startAttack("sse-hoard", [
                "--connections", "100", "--path", "/api/v1/events", "--hold", "4", "--source", "127.0.0.2",
            ])
            let two = try await Self.firstReport(of: second)
            try await server.seedNotifications(count: 400, payloadBytes: 3000)
            // The streams are full and held; the probe measures the attack, not this seeding.
            try startProbe()
            _ = await offload { first.finish(timeout: 30) }
            _ = await offload { second.finish(timeout: 30) }
            return AttackReport(["first": one, "second": two])
        }
        let first = try #require(report["first"] as? [String: Any])
        let second = try #require(report["second"] as? [String: Any])
        let firstStatuses = first["statuses"] as? [String: Int] ?? [:]
        let secondStatuses = second["statuses"] as? [String: Int] ?? [:]
        #expect(firstStatuses["200"] == 100, "per-client cap: \(first)")
        #expect(firstStatuses["429"] == 200, "\(first)")
        #expect(errorCode(Array(((first["bodies"] as? [String: String])?["429"] ?? "").utf8)) == "too_many_event_streams")
        #expect(secondStatuses["200"] == 50, "the rest of the server's cap: \(second)")
        #expect(secondStatuses["503"] == 50, "then 503: \(second)")
        #expect(errorCode(Array(((second["bodies"] as? [String: String])?["503"] ?? "").utf8)) == "too_many_event_streams")
    }

    /// The JSON line an attacker prints before it holds on.
    static func firstReport(of attacker: ChildProcess, timeout: Double = 20) async throws -> [String: Any] {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if let line = attacker.currentStdout.split(separator: "\n").first, let json = jsonObject(String(line)) {
                return json
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        throw ProcessError("no report from the attacker: \(attacker.currentStderr)")
    }

    /// One client opens 60 connections against `maxConnectionsPerClient` 50 (`maxConnections` 100):
    /// 50 are served and 10 refused at once, and other clients still get in. Bound: RSS +30 MB.
    @Test func oneClientCannotTakeEveryConnection() async throws {
        let server = try await HostileServer.start(limits: ["maxConnectionsPerClient": 50, "maxConnections": 100])
        defer { server.stop() }
        let report = try await underAttack(server, name: "connection hoarding", rssGrowthBoundMB: 30, probeSeconds: 2.5) { _ in
            let hoarder = try server.startAttack("connections", ["--count", "60", "--hold", "2"])
            // The report comes before the hold: the connections are open while the probe runs.
            let held = try await Self.firstReport(of: hoarder)
            let other = try await server.attack("connections", ["--count", "5", "--hold", "0", "--source", "127.0.0.2"])
            _ = await offload { hoarder.finish(timeout: 10) }
            return AttackReport(["hoarder": held, "other": other.json])
        }
        let hoarder = try #require(report["hoarder"] as? [String: Any])
        #expect(hoarder["served"] as? Int == 50 && hoarder["refused"] as? Int == 10, "\(hoarder)")
        #expect((report["other"] as? [String: Any])?["served"] as? Int == 5, "another client is served: \(report)")
    }
}
