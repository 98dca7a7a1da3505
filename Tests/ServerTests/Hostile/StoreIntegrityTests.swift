// APNs Sandbox — hostile storage, end to end with the real binary: a damaged store file, a full store.
import Crypto
import Foundation
import Glibc
import TestProcessSupport
import Testing

/// The store as an adversary would leave it: a page overwritten on disk while the server was stopped,
/// or no room left. Real `apns-sandbox serve` processes, real SQLite files, no mocks.
@Suite(.scaledTimeLimit(minutes: 3))
struct HostileStoreTests {

    /// A configuration like ``GracefulShutdownTests/writeConfiguration(in:)`` with a `storage` section.
    private static func writeConfiguration(in directory: String, name: String = "sandbox.json", storage: String) throws -> String {
        let key = directory + "/AuthKey.p8"
        if !FileManager.default.fileExists(atPath: key) {
            try ES256PrivateKey.generate().pkcs8PEM.write(toFile: key, atomically: true, encoding: .utf8)
        }
        let json = """
            {
              "apns": { "streamsBeforeAuthentication": 0 },
              "storage": { \(storage) },
              "teams": [ { "teamID": "\(testTeamID)", "keys": [ { "keyID": "\(testKeyID)", "privateKeyFile": "AuthKey.p8" } ],
                           "apps": [ "\(testTopic)" ] } ]
            }
            """
        let path = directory + "/" + name
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// One answered push: its status and apns-id (the server's, from the response header).
    private struct Answer {
        var status: Int
        var apnsID: String
        var device: String
    }

    /// Pushes once to each of `devices`, in order, over one HTTP/1.1 keep-alive connection (one curl,
    /// many URLs; the provider endpoint answers HTTP/1.1 as it answers h2). Not h2c: curl 7.88.1 cannot
    /// reuse a prior-knowledge connection for a second URL ("Error in the HTTP2 framing layer").
    private static func push(port: Int, token: String, to devices: [String]) async throws -> (answers: [Answer], output: String) {
        var args = [
            "-X", "POST", "-H", "authorization: bearer \(token)", "-H", "apns-topic: \(testTopic)",
            "-d", #"{"aps":{"alert":{"title":"Hostile store","body":"a push of ordinary size"}}}"#,
            "-w", "\n=> %{http_code} %header{apns-id}\n",
        ]
        args += devices.map { "http://127.0.0.1:\(port)/3/device/\($0)" }
        let output = try await run("/usr/bin/curl", args: ["-sS", "--max-time", "120"] + args, timeout: 150)
        let lines = output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("=> ") }
        let answers = zip(lines, devices).map { line, device in
            let fields = line.split(separator: " ")
            return Answer(
                status: fields.count > 1 ? Int(fields[1]) ?? 0 : 0, apnsID: fields.count > 2 ? String(fields[2]) : "",
                device: device)
        }
        return (answers, output.stdoutText)
    }

    private static func readyz(port: Int) async throws -> (status: Int, json: [String: Any]?) {
        try await apiRequest("GET", "http://127.0.0.1:\(port)/readyz")
    }

    /// `serve` on a data directory that must be refused: returns its exit status and output.
    private static func serveExpectingRefusal(_ binary: String, dataDirectory: String, config: String) async throws -> ProcessOutput {
        let server = try ChildProcess(binary, arguments: [
            "serve", "--config", config, "--data-dir", dataDirectory, "--tls-port", "0",
            "--http-port", "0", "--host", "127.0.0.1", "--log-level", "warning",
        ])
        return await offload { server.finish(timeout: 30) }
    }

    private static func stop(_ server: ChildProcess) async -> ProcessOutput {
        server.send(signal: SIGTERM)
        return await offload { server.finish(timeout: 15) }
    }

    /// Overwrites page `page` (1-based) of `path` with a pattern no SQLite page can have.
    private static func overwritePage(_ page: Int, of path: String, pageSize: Int = 4096) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64((page - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: pageSize))
        try handle.synchronize()
    }

    private static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// A store made by the server, one 4 KiB page overwritten mid-file while it was stopped: `serve`
    /// exits non-zero with one clear error (the file, quick_check's finding, how to recover) and leaves
    /// the file as it was; with `storage.onCorruption: moveAside` it starts on a new empty store, ready,
    /// and the damaged file is kept beside it as `sandbox.sqlite.corrupt-<UTC time>`.
    @Test func damagedStoreIsRefusedThenMovedAside() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("hostile-store")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let config = try Self.writeConfiguration(in: dataDirectory, storage: #""integrityCheck": "quick""#)
        let token = try await run(binary, args: ["token", "--config", config]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let (answers, output) = try await Self.push(port: port, token: token, to: Array(repeating: deviceToken, count: 300))
        #expect(answers.count == 300 && answers.allSatisfy { $0.status == 200 }, "\(output.suffix(500))")
        let stopped = await Self.stop(server)
        #expect(stopped.status == 0, "\(stopped)")

        let store = dataDirectory + "/sandbox.sqlite"
        #expect(Self.fileSize(store + "-wal") == 0, "the WAL was folded into the file at shutdown")
        let pages = Self.fileSize(store) / 4096
        try #require(pages > 50, "a store of \(pages) pages")
        try Self.overwritePage(pages / 2, of: store)
        let damaged = FileManager.default.contents(atPath: store)

        let refused = try await Self.serveExpectingRefusal(binary, dataDirectory: dataDirectory, config: config)
        #expect(!refused.timedOut && refused.status != 0, "\(refused)")
        let message = refused.stderrText
        #expect(message.contains("cannot start"), "\(message)")
        #expect(message.contains(store) && message.contains("is damaged"), "\(message)")
        #expect(message.contains("PRAGMA quick_check found: Page \(pages / 2)"), "\(message)")
        #expect(message.contains("onCorruption") && message.contains("moveAside") && message.contains(".recover"), "\(message)")
        #expect(message.split(separator: "\n").count == 1, "one error line: \(message)")
        #expect(FileManager.default.contents(atPath: store) == damaged, "the refused file was left as it was")

        let recovering = try Self.writeConfiguration(
            in: dataDirectory, name: "recover.json", storage: #""onCorruption": "moveAside""#)
        let (fresh, freshPort) = try await GracefulShutdownTests.startBinary(
            binary, dataDirectory: dataDirectory, config: recovering)
        let ready = try await Self.readyz(port: freshPort)
        #expect(ready.status == 200 && ready.json?["status"] as? String == "ready", "\(ready)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: dataDirectory)
            .filter { $0.hasPrefix("sandbox.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(kept.count == 1, "\(kept)")
        if let name = kept.first {
            #expect(name.wholeMatch(of: #/sandbox\.sqlite\.corrupt-\d{8}T\d{6}Z/#) != nil, "\(name)")
            #expect(FileManager.default.contents(atPath: dataDirectory + "/" + name) == damaged)
        }
        let list = try await apiRequest("GET", "http://127.0.0.1:\(freshPort)/api/v1/notifications?limit=1")
        #expect(list.json?["total"] as? Int == 0, "the new store is empty: \(list)")
        let after = try await Self.push(port: freshPort, token: token, to: [deviceToken])
        #expect(after.answers.first?.status == 200, "\(after.output)")
        let output2 = await Self.stop(fresh)
        #expect(output2.stderrText.contains("DAMAGED STORE MOVED ASIDE"), "\(output2)")
    }

    /// The event log's page damaged while the server was stopped: with the default check the server
    /// refuses to start; with `storage.integrityCheck: off` it starts, and the first replay that reads
    /// the page turns /readyz not-ready with SQLite's reason (never a silently empty replay and "ready").
    @Test func damagedEventLogFoundAtRunTimeTurnsReadinessOff() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("hostile-events")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let config = try Self.writeConfiguration(in: dataDirectory, storage: "")
        let token = try await run(binary, args: ["token", "--config", config]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let (answers, _) = try await Self.push(port: port, token: token, to: Array(repeating: deviceToken, count: 200))
        #expect(answers.filter { $0.status == 200 }.count == 200)
        let waited = try await curl(["-o", "/dev/null", "-w", "%{http_code}",
                                     "http://127.0.0.1:\(port)/api/v1/notifications/wait?count=200&timeout=20&device=\(deviceToken)"])
        #expect(waited.stdoutText == "200")
        _ = await Self.stop(server)

        // The root page of the events table, as SQLite's schema table names it.
        let store = dataDirectory + "/sandbox.sqlite"
        let root = try await run("python3", args: [
            "-c", "import sqlite3,sys; print(sqlite3.connect('file:'+sys.argv[1]+'?immutable=1', uri=True)"
                + ".execute(\"SELECT rootpage FROM sqlite_master WHERE name = 'events'\").fetchone()[0])", store,
        ])
        let page = try #require(Int(root.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)), "\(root)")
        try Self.overwritePage(page, of: store)

        let refused = try await Self.serveExpectingRefusal(binary, dataDirectory: dataDirectory, config: config)
        #expect(refused.status != 0 && refused.stderrText.contains("is damaged"), "\(refused)")

        let unchecked = try Self.writeConfiguration(in: dataDirectory, name: "off.json", storage: #""integrityCheck": "off""#)
        let (running, runningPort) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: unchecked)
        defer { running.send(signal: SIGKILL) }
        let replay = try await run("/usr/bin/curl", args: [
            "-sN", "--max-time", "3", "-H", "Last-Event-ID: 0", "http://127.0.0.1:\(runningPort)/api/v1/events",
        ])
        #expect(!replay.stdoutText.contains("event: push.accepted"), "nothing can be read from the damaged log")
        let ready = try await Self.readyz(port: runningPort)
        #expect(ready.status == 503, "\(ready)")
        #expect(ready.json?["status"] as? String == "not-ready")
        #expect(ready.json?["reason"] as? String == "store: database disk image is malformed", "\(ready)")
        let output = await Self.stop(running)
        #expect(output.stderrText.contains("DAMAGED"), "\(output.stderrText.suffix(2000))")
    }

    /// Polls /readyz until it answers `status` (up to `timeout` seconds); the last answer.
    private static func readyz(port: Int, becoming status: Int, timeout: Double = 10) async throws -> (status: Int, json: [String: Any]?) {
        var answer = try await readyz(port: port)
        let deadline = monotonicSeconds() + timeout
        while answer.status != status, monotonicSeconds() < deadline {
            try await Task.sleep(nanoseconds: 100_000_000)
            answer = try await readyz(port: port)
        }
        return answer
    }

    /// A store at `storage.maxSizeMB` (SQLite's own SQLITE_FULL): pushes get APNs' 500
    /// InternalServerError and /readyz is 503 with SQLite's reason while /healthz stays 200. Raising the
    /// limit and restarting: ready, every push that got a 200 is there and final, pushes get 200 again.
    /// Back at the low limit the store is not-ready from the start (no push needed); deleting records
    /// through the API frees room inside the file and /readyz turns ready again by itself (the probe),
    /// and pushes get 200.
    @Test func fullStoreAnswers500AndReadinessFollowsTheRoom() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("hostile-full")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let tight = try Self.writeConfiguration(in: dataDirectory, storage: #""maxSizeMB": 1"#)
        let token = try await run(binary, args: ["token", "--config", tight]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: tight)
        defer { server.send(signal: SIGKILL) }
        #expect(try await Self.readyz(port: port).status == 200)

        // Far more than 1 MiB holds (each push is a record and two events of about 600 bytes each).
        let (answers, output) = try await Self.push(port: port, token: token, to: Array(repeating: deviceToken, count: 900))
        try #require(answers.count == 900, "\(output.suffix(1000))")
        let statuses = Set(answers.map(\.status))
        #expect(statuses == [200, 500], "only 200 and 500: \(statuses)")
        let acknowledged = answers.filter { $0.status == 200 }.map(\.apnsID)
        #expect(acknowledged.count > 100)
        #expect(answers.suffix(100).allSatisfy { $0.status == 500 }, "the store stays full")
        #expect(output.contains(#"{"reason":"InternalServerError"}"#))
        let full = try await Self.readyz(port: port)
        #expect(full.status == 503, "\(full)")
        #expect(full.json?["status"] as? String == "not-ready")
        #expect(full.json?["reason"] as? String == "store: database or disk is full", "\(full)")
        #expect(try await healthz(port: port)?.status == 200, "liveness is not readiness")
        let stopped = await Self.stop(server)
        #expect(stopped.status == 0)
        #expect(stopped.stderrText.contains("store: writes fail"), "\(stopped.stderrText.suffix(2000))")

        // A higher limit and a restart (the quick check runs): every 200 is there and final.
        let roomy = try Self.writeConfiguration(in: dataDirectory, name: "roomy.json", storage: #""maxSizeMB": 16"#)
        let (restarted, roomyPort) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: roomy)
        defer { restarted.send(signal: SIGKILL) }
        #expect(try await Self.readyz(port: roomyPort).status == 200)
        let base = "http://127.0.0.1:\(roomyPort)/api/v1/notifications"
        let waited = try await curl(["-o", "/dev/null", "-w", "%{http_code}",
                                     "\(base)/wait?count=\(acknowledged.count)&timeout=30&device=\(deviceToken)"])
        #expect(waited.stdoutText == "200", "every acknowledged push reaches a final state")
        var stored = Set<String>()
        var offset = 0
        while true {
            let page = try await apiRequest("GET", "\(base)?device=\(deviceToken)&limit=1000&offset=\(offset)")
            let notifications = page.json?["notifications"] as? [[String: Any]] ?? []
            stored.formUnion(notifications.compactMap { $0["apnsId"] as? String })
            if notifications.count < 1000 { break }
            offset += notifications.count
        }
        let missing = Set(acknowledged).subtracting(stored)
        #expect(missing.isEmpty, "\(missing.count) of \(acknowledged.count) acknowledged pushes are missing")
        #expect(stored.count == acknowledged.count, "no push that got a 500 was stored")
        let more = try await Self.push(port: roomyPort, token: token, to: Array(repeating: deviceToken, count: 20))
        #expect(more.answers.allSatisfy { $0.status == 200 }, "room again after raising the limit")
        _ = await Self.stop(restarted)

        // Back to 1 MiB: full from the start, before any push.
        let (again, againPort) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: tight)
        defer { again.send(signal: SIGKILL) }
        let atStart = try await Self.readyz(port: againPort)
        #expect(atStart.status == 503 && atStart.json?["reason"] as? String == "store: database or disk is full", "\(atStart)")
        // Deleting the records through the API frees pages inside the file; no push follows.
        let deleted = try await apiRequest("DELETE", "http://127.0.0.1:\(againPort)/api/v1/notifications?all=true")
        #expect(deleted.status == 200, "\(deleted)")
        let ready = try await Self.readyz(port: againPort, becoming: 200)
        #expect(ready.status == 200 && ready.json?["status"] as? String == "ready", "\(ready)")
        let after = try await Self.push(port: againPort, token: token, to: Array(repeating: deviceToken, count: 5))
        #expect(after.answers.allSatisfy { $0.status == 200 }, "\(after.output)")
        let last = await Self.stop(again)
        #expect(last.stderrText.contains("already at its size limit"), "\(last.stderrText.suffix(2000))")
    }
}
