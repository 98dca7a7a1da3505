// APNs Sandbox — end to end with the real binary: SIGTERM under HTTP/2 load, and `healthcheck`.
import Crypto
import Foundation
import Glibc
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct GracefulShutdownTests {
    /// The `apns-sandbox` executable built next to the test bundle (or in `<package>/.build/debug`).
    static func executable() throws -> String {
        var candidates: [String] = []
        let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        candidates.append(argument0.deletingLastPathComponent().appendingPathComponent("apns-sandbox").path)
        let bundle = Bundle.main.bundleURL.resolvingSymlinksInPath()
        candidates.append(bundle.appendingPathComponent("apns-sandbox").path)
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("apns-sandbox").path)
        candidates.append(TestPaths.packageRoot + "/.build/debug/apns-sandbox")
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            return found
        }
        throw ProcessError(
            "the apns-sandbox executable was not found (looked at \(candidates)); build it with "
                + "`swift build --build-tests` before `swift test`")
    }

    /// Writes a configuration with one team, a fresh signing key and the test app; returns its path.
    /// `streamsBeforeAuthentication` is 0 so that h2load's first burst is not refused (APNs' one
    /// stream before a valid token), which keeps the accounting of the shutdown exact.
    static func writeConfiguration(in directory: String) throws -> String {
        try ES256PrivateKey.generate().pkcs8PEM.write(toFile: directory + "/AuthKey.p8", atomically: true, encoding: .utf8)
        let json = """
            {
              "apns": { "streamsBeforeAuthentication": 0 },
              "teams": [ { "teamID": "\(testTeamID)", "keys": [ { "keyID": "\(testKeyID)", "privateKeyFile": "AuthKey.p8" } ],
                           "apps": [ "\(testTopic)" ] } ]
            }
            """
        let path = directory + "/sandbox.json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Starts `apns-sandbox serve` with its cleartext listener on a port the kernel picks (TLS on port 0 too) and
    /// waits until it is ready (``startServing(_:environment:port:_:)``).
    static func startBinary(_ binary: String, dataDirectory: String, config: String) async throws -> (ChildProcess, Int) {
        try await startServing(binary) { port in
            [
                "serve", "--config", config, "--data-dir", dataDirectory, "--tls-port", "0", "--http-port", "\(port)",
                "--host", "127.0.0.1", "--log-level", "notice",
            ]
        }
    }

    /// SIGTERM during `h2load -c4 -m10` exits 0 in the grace period; every answered request got a 200.
    @Test func sigtermUnderLoadDrainsAndExitsZero() async throws {
        let binary = try Self.executable()
        let dataDirectory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let config = try Self.writeConfiguration(in: dataDirectory)
        let (server, port) = try await Self.startBinary(binary, dataDirectory: dataDirectory, config: config)
        defer { server.send(signal: SIGKILL) }

        // A provider token from the CLI, signed with the configured key.
        let tokenOutput = try await run(binary, args: ["token", "--config", config])
        try #require(tokenOutput.status == 0, "apns-sandbox token: \(tokenOutput)")
        let providerToken = tokenOutput.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)

        let health = try await run(binary, args: ["healthcheck", "--url", "http://127.0.0.1:\(port)/healthz"])
        #expect(health.status == 0, "healthcheck while running: \(health)")

        let payload = dataDirectory + "/payload.json"
        _ = FileManager.default.createFile(atPath: payload, contents: Data(#"{"aps":{"alert":"load"}}"#.utf8))
        let total = 200_000
        let load = try ChildProcess("h2load", arguments: [
            "-c4", "-m10", "-n", "\(total)", "-d", payload, "-H", "apns-topic: \(testTopic)",
            "-H", "authorization: bearer \(providerToken)",
            "http://127.0.0.1:\(port)/3/device/\(deviceToken)",
        ])
        // SIGTERM once the server has answered some of the load (counted, not a fixed 0.5 s: on a loaded machine
        // h2load may not have connected by then, and then no request was answered before the shutdown).
        let loadDeadline = monotonicSeconds() + TestTime.seconds(60)
        var stored = 0
        while stored < 200, monotonicSeconds() < loadDeadline, load.wait(timeout: 0) == nil {
            try await Task.sleep(nanoseconds: 20_000_000)
            stored = try await apiRequest("GET", "http://127.0.0.1:\(port)/api/v1/notifications?limit=1").json?["total"] as? Int ?? 0
        }
        #expect(stored >= 200, "the server answered \(stored) pushes of the load before the shutdown")
        let signalledAt = monotonicSeconds()
        server.send(signal: SIGTERM)

        // Default shutdownGraceSeconds is 10; a drained server exits long before that.
        let status = await offload { server.wait(timeout: 12) }
        let exitSeconds = monotonicSeconds() - signalledAt
        let serverOutput = server.finish(timeout: 1)
        let loadOutput = await offload { load.finish(timeout: 20) }

        #expect(status == 0, "server exit status \(String(describing: status)) after \(exitSeconds) s: \(serverOutput)")
        #expect(!serverOutput.signaled)
        #expect(exitSeconds < 10, "exited \(exitSeconds) s after SIGTERM")
        #expect(!serverOutput.stderrText.contains("still open after the grace period"), "\(serverOutput.stderrText)")

        #expect(!loadOutput.timedOut, "h2load did not finish: \(loadOutput)")
        let text = loadOutput.stdoutText
        let requests = try #require(
            text.firstMatch(of: #/requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/#),
            "no request summary in h2load output: \(loadOutput)")
        let codes = try #require(
            text.firstMatch(of: #/status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/#),
            "no status code summary in h2load output: \(loadOutput)")
        let started = Int(requests.output.2)!, done = Int(requests.output.3)!
        let succeeded = Int(requests.output.4)!, timedOut = Int(requests.output.7)!
        let ok = Int(codes.output.1)!, clientErrors = Int(codes.output.3)!, serverErrors = Int(codes.output.4)!

        #expect(ok > 0, "some requests were answered before the shutdown:\n\(text)")
        #expect(ok == succeeded, "every request that got a response got a 200:\n\(text)")
        #expect(serverErrors == 0 && clientErrors == 0, "\(text)")
        #expect(timedOut == 0, "\(text)")
        // A single GOAWAY names the last stream the server processed; requests the clients had in
        // flight beyond it are refused (safe to retry). At most the in-flight window (4 × 10) may be.
        #expect(started - succeeded <= 40, "only requests in flight at GOAWAY may go unanswered:\n\(text)")
        #expect(done <= started)
        #expect(started < total, "SIGTERM arrived before h2load finished (otherwise the test proves nothing):\n\(text)")

        let after = try await run(binary, args: ["healthcheck", "--url", "http://127.0.0.1:\(port)/healthz"])
        #expect(after.status == 1, "healthcheck after shutdown: \(after)")
    }

    /// In-process shutdown under h2c load: every stream up to GOAWAY's last-stream-id gets a 200, none above it, then
    /// close; the shutdown notice and the final GOAWAY both carry `{"reason":"Shutdown"}`.
    /// (A grace of 20 s against a bound of 15: under the loaded suite a drain may take seconds; running out of
    /// the grace is what must not happen, and its log line is checked too.)
    @Test func shutdownAnswersEveryStreamUpToGoawayLastStreamID() async throws {
        try await withServer(configure: { $0.limits.shutdownGraceSeconds = 20 }) { server in
            let probe = try ChildProcess("python3", arguments: [
                TestPaths.goawayProbe, "--port", "\(server.httpPort)", "--path", "/3/device/\(deviceToken)",
                "--header", "apns-topic: \(testTopic)", "--header", server.authorizationHeader,
                "--connections", "4", "--inflight", "10", "--timeout", "60",
            ])
            // Shut down once every connection has had answers, plus a little more load. The probe's timeout is a cap
            // only (the server's close ends it): in the full suite's first minute its connections have needed more
            // than the 15 s it used to have, and then it saw no GOAWAY at all.
            let deadline = monotonicSeconds() + 30
            while probe.currentStderr.components(separatedBy: "first response").count - 1 < 4,
                  monotonicSeconds() < deadline, probe.wait(timeout: 0) == nil {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            let seconds = await server.shutdown()
            let output = await offload { probe.finish(timeout: 70) }

            #expect(seconds < 15, "drained in \(seconds) s, before the grace period")
            #expect(!server.logSink.capturedLines.contains { $0.contains("still open after the grace period") })
            #expect(output.status == 0, "\(output)")
            let connections = try #require(
                (try? JSONSerialization.jsonObject(with: output.stdout)) as? [[String: Any]], "\(output)")
            #expect(connections.count == 4)
            for (index, connection) in connections.enumerated() {
                #expect(connection["goaway"] as? Bool == true, "connection \(index) got GOAWAY: \(connection)")
                #expect(connection["errorCode"] as? Int == 0, "GOAWAY is NO_ERROR: \(connection)")
                let goaways = connection["goaways"] as? [[String: Any]] ?? []
                #expect(goaways.count == 2, "a shutdown notice, then the final GOAWAY: \(goaways)")
                #expect(goaways.first?["lastStreamID"] as? Int == 0x7FFF_FFFF, "the notice first: \(goaways)")
                #expect(goaways.allSatisfy { $0["debugData"] as? String == #"{"reason":"Shutdown"}"# },
                        "both carry Apple's {\"reason\":\"Shutdown\"}: \(goaways)")
                #expect((connection["ok"] as? Int ?? 0) > 0, "load was flowing: \(connection)")
                #expect(connection["other"] as? Int == 0, "only 200s: \(connection)")
                #expect(connection["resets"] as? Int == 0, "no stream reset: \(connection)")
                #expect((connection["unansweredUpToLast"] as? [Int])?.isEmpty == true, "streams lost: \(connection)")
                #expect((connection["answeredAboveLast"] as? [Int])?.isEmpty == true, "\(connection)")
                #expect(connection["closed"] as? Bool == true, "the server closed the connection: \(connection)")
            }
        }
    }
}
