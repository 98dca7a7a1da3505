// APNs Sandbox — hostile peer: an exec extension that hangs with a child of its own, and a `kill -9` of the
// server. Nothing of the instance may survive, and its notification is final once, with the original content.
import Foundation
import Glibc
import Synchronization
import TestProcessSupport
import Testing
import Support

@Suite(.serialized, .scaledTimeLimit(minutes: 2))
struct HostileExtensionProcessTests {
    static let originalTitle = "Original title"
    static let originalBody = "Original body"

    /// The server, killed with SIGKILL while its extension hangs, takes the extension's process (PDEATHSIG)
    /// and the extension's own child (the guardian) with it within a second. Restarted on the same data
    /// directory, it finalises the notification once, `original-crash` with the original content, and does
    /// not run the extension again.
    @Test func killNineTakesTheExtensionAndItsChildren() async throws {
        let setup = try Setup()
        defer { setup.cleanUp() }
        let (server, port) = try await setup.start()
        let apnsID = try await setup.push(port: port)
        let processes = try await setup.waitForExtension()
        let guardian = try #require(Self.children(of: server.pid).first { Self.command($0) == "nse-guardian" },
                                    "the server has a guardian process")

        server.send(signal: SIGKILL)
        _ = await offload { server.finish(timeout: 10) }
        #expect(await Self.dies(processes.child), "the extension process died with the server")
        #expect(await Self.dies(processes.grandchild), "the extension's own child died with it")
        #expect(await Self.dies(guardian), "the guardian exits once it has done its work")

        let (restarted, newPort) = try await setup.start()
        defer {
            restarted.send(signal: SIGTERM)
            _ = restarted.finish(timeout: 10)
        }
        try await setup.expectFinalisedOnce(apnsID, port: newPort)
        for process in [processes.child, processes.grandchild] {
            #expect(Self.isDead(process), "\(process) survived the restart")
        }
        #expect(Self.processes(ofInstance: processes.instance).isEmpty)
    }

    /// The same with the guardian killed first (the OOM killer, a `kill -9` of everything but the server):
    /// only the extension's process dies with the server; its child is killed by the restart, from the
    /// ledger in the data directory, before the notification is finalised.
    @Test func restartKillsWhatTheGuardianCouldNot() async throws {
        let setup = try Setup()
        defer { setup.cleanUp() }
        let (server, port) = try await setup.start()
        let apnsID = try await setup.push(port: port)
        let processes = try await setup.waitForExtension()
        let guardian = try #require(Self.children(of: server.pid).first { Self.command($0) == "nse-guardian" })
        kill(guardian.pid, SIGKILL)
        #expect(await Self.dies(guardian))

        server.send(signal: SIGKILL)
        _ = await offload { server.finish(timeout: 10) }
        #expect(await Self.dies(processes.child), "PDEATHSIG needs no guardian")
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(!Self.isDead(processes.grandchild), "without the guardian, the child's child outlives the server")

        let (restarted, newPort) = try await setup.start()
        defer {
            restarted.send(signal: SIGTERM)
            _ = restarted.finish(timeout: 10)
        }
        // Killed during the start, before the server answered /healthz (and before recovery).
        #expect(Self.isDead(processes.grandchild), "the restart killed what the previous run left")
        #expect(Self.processes(ofInstance: processes.instance).isEmpty)
        #expect(restarted.currentStderr.contains("left by a previous run were killed"), "\(restarted.currentStderr)")
        try await setup.expectFinalisedOnce(apnsID, port: newPort)
    }

    // MARK: - Setup

    /// A data directory, a configuration whose app has the hanging exec extension (configured in the
    /// file's `apps[]`, not through the API), and a work directory where the script leaves its traces.
    struct Setup {
        let binary: String
        let data: String
        let work: String
        let config: String
        /// Every extension process seen, as seen (pid and start time): what ``cleanUp()`` may kill.
        let seen = SeenProcesses()

        init() throws {
            binary = try GracefulShutdownTests.executable()
            data = try makeTemporaryDirectory("hostile-extension")
            work = try makeTemporaryDirectory("hostile-extension-work")
            // Every run appends a line; then a child that would outlive everything, then both pids (each
            // file written whole), then it reads the request and waits forever.
            let script = """
                #!/bin/sh
                echo run >> "$WORK/runs"
                sleep 300 &
                echo $! > "$WORK/grandchild.tmp" && mv "$WORK/grandchild.tmp" "$WORK/grandchild"
                echo $$ > "$WORK/child.tmp" && mv "$WORK/child.tmp" "$WORK/child"
                read -r request
                wait
                """
            try script.write(toFile: work + "/nse.sh", atomically: true, encoding: .utf8)
            chmod(work + "/nse.sh", 0o755)
            let configured = try GracefulShutdownTests.writeConfiguration(in: data)
            var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configured)))
                as? [String: Any])
            json["apps"] = [[
                "bundleID": testTopic, "teamID": testTeamID,
                "serviceExtension": [
                    "kind": "exec", "path": work + "/nse.sh", "environment": ["WORK": work],
                    "budgetMs": 60_000, "graceMs": 1_000,
                ] as [String: Any],
            ] as [String: Any]]
            try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: configured))
            config = configured
        }

        func start() async throws -> (ChildProcess, Int) {
            try await GracefulShutdownTests.startBinary(binary, dataDirectory: data, config: config)
        }

        /// A mutable-content alert to the test device; its apns-id.
        func push(port: Int) async throws -> String {
            let token = try await run(binary, args: ["token", "--config", config]).stdoutText
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let payload = #"{"aps":{"alert":{"title":"\#(HostileExtensionProcessTests.originalTitle)","body":"\#(HostileExtensionProcessTests.originalBody)"},"mutable-content":1}}"#
            let output = try await curl([
                "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-X", "POST",
                "http://127.0.0.1:\(port)/3/device/\(deviceToken)", "-H", "authorization: bearer \(token)",
                "-H", "apns-topic: \(testTopic)", "-H", "apns-push-type: alert", "-d", payload,
            ])
            let response = try #require(CurlResponse(output.stdout), "\(output)")
            #expect(response.status == 200, "\(output)")
            return try #require(response.header("apns-id"), "\(output)")
        }

        /// Waits until the script has written both pids; the processes with their start times and instance.
        func waitForExtension() async throws -> (child: SeenProcess, grandchild: SeenProcess, instance: String) {
            let deadline = monotonicSeconds() + 15
            while monotonicSeconds() < deadline,
                !FileManager.default.fileExists(atPath: work + "/child")
                    || !FileManager.default.fileExists(atPath: work + "/grandchild")
            {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            func process(_ name: String) throws -> SeenProcess {
                let text = try String(contentsOfFile: work + "/" + name, encoding: .utf8)
                let pid = try #require(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), "\(name): \(text)")
                return try #require(HostileExtensionProcessTests.process(pid), "\(name) \(pid) is not running")
            }
            let child = try process("child")
            let grandchild = try process("grandchild")
            seen.add(child)
            seen.add(grandchild)
            let environment = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child.pid)/environ"))) ?? Data()
            let instance = try #require(String(decoding: environment, as: UTF8.self).split(separator: "\0")
                .first { $0.hasPrefix("APNS_SANDBOX_INSTANCE=") }?.dropFirst("APNS_SANDBOX_INSTANCE=".count))
            return (child, grandchild, String(instance))
        }

        /// The notification is final: `displayed`, `original-crash`, the original content, one run of the
        /// extension, one `displayed`, and a timeline that says the sandbox restarted.
        func expectFinalisedOnce(_ apnsID: String, port: Int) async throws {
            let output = try await curl(["http://127.0.0.1:\(port)/api/v1/notifications/\(apnsID)?device=\(deviceToken)&wait=8"])
            let record = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any], "\(output)")
            #expect(record["status"] as? String == "displayed", "\(record)")
            #expect(record["outcome"] as? String == "original-crash", "\(record)")
            let shown = record["displayed"] as? [String: Any]
            #expect(shown?["title"] as? String == HostileExtensionProcessTests.originalTitle, "\(record)")
            #expect(shown?["body"] as? String == HostileExtensionProcessTests.originalBody, "\(record)")
            let timeline = record["timeline"] as? [[String: Any]] ?? []
            let steps = timeline.compactMap { $0["step"] as? String }
            #expect(steps.filter { $0 == "extension-running" }.count == 1, "\(steps)")
            #expect(steps.filter { $0 == "displayed" }.count == 1, "\(steps)")
            #expect(steps.contains("resumed"), "\(steps)")
            #expect((timeline.last?["detail"] as? String)?.contains("restarted") == true, "\(timeline.last ?? [:])")
            // A second run would have started at the restart: give it a moment to show.
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let runs = (try? String(contentsOfFile: work + "/runs", encoding: .utf8)) ?? ""
            #expect(runs.split(separator: "\n").count == 1, "the extension ran \(runs.split(separator: "\n").count) times")
            let listed = try await curl(["http://127.0.0.1:\(port)/api/v1/notifications?device=\(deviceToken)&limit=10"])
            let list = try #require(try JSONSerialization.jsonObject(with: listed.stdout) as? [String: Any])
            let records = list["notifications"] as? [[String: Any]] ?? []
            #expect(records.filter { $0["apnsId"] as? String == apnsID }.count == 1, "\(records)")
        }

        /// Kills whatever a failing test left: only the processes it saw, while their pid still names them
        /// (the same start time as when they were seen; a pid freed since may name another test's process).
        func cleanUp() {
            for process in seen.all where !HostileExtensionProcessTests.isDead(process) {
                kill(process.pid, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: work)
        }
    }

    // MARK: - Processes, from /proc

    /// The processes a test saw.
    final class SeenProcesses: Sendable {
        private let processes = Locked<[SeenProcess]>([])

        func add(_ process: SeenProcess) { processes.withLock { $0.append(process) } }
        var all: [SeenProcess] { processes.withLock { $0 } }
    }

    /// A process as it was seen: its pid and start time name it, even after the pid is reused.
    struct SeenProcess: Sendable, CustomStringConvertible {
        let pid: pid_t
        let start: UInt64
        var description: String { "process \(pid) (started at tick \(start))" }
    }

    /// Fields of /proc/<pid>/stat after the command name: state, parent, start time.
    static func stat(_ pid: pid_t) -> (state: Character, parent: pid_t, start: UInt64)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let state = fields[0].first, let parent = pid_t(fields[1]), let start = UInt64(fields[19])
        else { return nil }
        return (state, parent, start)
    }

    static func process(_ pid: pid_t) -> SeenProcess? {
        stat(pid).map { SeenProcess(pid: pid, start: $0.start) }
    }

    /// Gone, a zombie (nobody here reaps orphans promptly), or its pid now names another process.
    static func isDead(_ process: SeenProcess) -> Bool {
        guard let now = stat(process.pid) else { return true }
        return now.start != process.start || now.state == "Z" || now.state == "X"
    }

    /// Whether `process` is gone within `seconds` of real time: generous (the point is that it dies, not how fast;
    /// a 1 s bound is tight for a guardian's or a kernel's work on a loaded machine), it returns as soon as it is.
    static func dies(_ process: SeenProcess, within seconds: Double = TestTime.seconds(10)) async -> Bool {
        let deadline = monotonicSeconds() + seconds
        while !isDead(process) {
            if monotonicSeconds() > deadline { return false }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return true
    }

    static func command(_ process: SeenProcess) -> String {
        ((try? String(contentsOfFile: "/proc/\(process.pid)/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func children(of parent: pid_t) -> [SeenProcess] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name in
            guard let pid = pid_t(name), let info = stat(pid), info.parent == parent else { return nil }
            return SeenProcess(pid: pid, start: info.start)
        }
    }

    /// Live processes whose environment names `instance` (`APNS_SANDBOX_INSTANCE`).
    static func processes(ofInstance instance: String) -> [SeenProcess] {
        let marker = "APNS_SANDBOX_INSTANCE=" + instance
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name in
            guard let pid = pid_t(name), let process = process(pid), !isDead(process),
                let environment = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ")),
                String(decoding: environment, as: UTF8.self).split(separator: "\0").contains(Substring(marker))
            else { return nil }
            return process
        }
    }
}
