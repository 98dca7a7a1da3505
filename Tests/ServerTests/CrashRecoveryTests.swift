// APNs Sandbox — nothing acknowledged is lost: kill -9 under load, restart, every 200 is there.
import Foundation
import Glibc
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 2))
struct CrashRecoveryTests {
    /// Pushes stream in; the server is killed with SIGKILL mid-stream and restarted on the same data
    /// directory; every apns-id that got a 200 before the kill is in the store and reaches a final state.
    @Test func everyAcknowledgedPushSurvivesKillNine() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("crash")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let config = try GracefulShutdownTests.writeConfiguration(in: dataDirectory)
        let token = try await run(binary, args: ["token", "--config", config]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let pusher = try ChildProcess("python3", arguments: [
            TestPaths.packageRoot + "/Tests/Python/crash_pusher.py", "--port", "\(port)", "--token", token,
            "--topic", testTopic, "--device", deviceToken, "--count", "200000", "--window", "200",
        ])
        // Let a thousand pushes or more through (counted from the pusher's output, not timed: a loaded machine runs
        // the debug server slowly), then pull the plug.
        let deadline = monotonicSeconds() + 60
        while pusher.currentStdout.split(separator: "\n").count < 1000, monotonicSeconds() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        server.send(signal: SIGKILL)
        _ = server.finish(timeout: 10)
        let pushed = pusher.finish(timeout: 20)
        let acknowledged = pushed.stdoutText.split(separator: "\n").map(String.init)
        try #require(acknowledged.count > 500, "too few pushes before the kill: \(pushed)")

        let (restarted, newPort) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        defer {
            restarted.send(signal: SIGTERM)
            _ = restarted.finish(timeout: 10)
        }
        let base = "http://127.0.0.1:\(newPort)/api/v1/notifications"
        // Wait until at least the acknowledged number of records is final, then read them all.
        let waited = try await curl(["-o", "/dev/null", "-w", "%{http_code}",
                                     "\(base)/wait?count=\(acknowledged.count)&timeout=30&device=\(deviceToken)"])
        #expect(waited.stdoutText == "200", "recovered records did not all reach a final state: \(waited)")
        var final = Set<String>()
        var offset = 0
        while true {
            let page = try await curl(["\(base)?device=\(deviceToken)&limit=1000&offset=\(offset)"])
            let json = try #require(try JSONSerialization.jsonObject(with: page.stdout) as? [String: Any])
            let notifications = try #require(json["notifications"] as? [[String: Any]])
            for record in notifications where record["final"] as? Bool == true {
                if let id = record["apnsId"] as? String { final.insert(id) }
            }
            if notifications.count < 1000 { break }
            offset += notifications.count
        }
        let missing = acknowledged.filter { !final.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of \(acknowledged.count) acknowledged pushes are missing or unfinished, e.g. \(missing.prefix(3))")
    }
}
