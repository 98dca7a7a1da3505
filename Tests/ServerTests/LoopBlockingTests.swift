// APNs Sandbox — event loops never wait for the store, and internal errors never reach the client.
import Foundation
import Support
import Testing
import TestProcessSupport

@Suite struct LoopBlockingTests {
    /// Holds SQLite's write lock on `file` from another process (python's sqlite3) for `seconds`:
    /// the sandbox's next commit waits for it (busy timeout), a slow store write made real.
    private static func holdWriteLock(on file: String, seconds: Double) async throws -> ChildProcess {
        let holder = try ChildProcess("python3", arguments: ["-c", """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(float(sys.argv[2]))
            db.execute("COMMIT")
            """, file, "\(seconds)"])
        for _ in 0..<250 where !holder.currentStdout.contains("locked") {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        try #require(holder.currentStdout.contains("locked"), "the lock holder did not start: \(holder.currentStderr)")
        return holder
    }

    /// A device write that waits 600 ms for the store (its commit blocked by another process's lock) does
    /// not hold up `GET /healthz` on the same, only, event loop: the write runs on a worker thread. (A guard
    /// against regressions: the device routes were already blocking work before issue #13.)
    @Test func slowStoreWriteDoesNotDelayHealthz() async throws {
        try await withServer(configure: { $0.eventLoops = 1 }) { sandbox in
            let holder = try await Self.holdWriteLock(on: sandbox.dataDirectory + "/sandbox.sqlite", seconds: 0.6)
            defer { holder.send(signal: SIGKILL) }
            let measured = try await offload { () throws -> (write: Double, probed: Double, status: Int?, health: [Double]) in
                let writer = try RawSocket(port: sandbox.httpPort)
                let prober = try RawSocket(port: sandbox.httpPort)
                let body = "{\"token\":\"\(String(repeating: "c4", count: 32))\"}"
                let started = monotonicSeconds()
                try writer.send(
                    "POST /api/v1/devices HTTP/1.1\r\nHost: e2e\r\ncontent-type: application/json\r\n"
                        + "content-length: \(body.utf8.count)\r\n\r\n\(body)")
                var health: [Double] = []
                for _ in 0..<6 {
                    Thread.sleep(forTimeInterval: 0.05)
                    let sent = monotonicSeconds()
                    try prober.send("GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n")
                    let answer = prober.readResponses(1, timeout: 5)
                    guard HTTP1Response.parseAll(answer.bytes).responses.first?.status == 200 else {
                        throw ProcessError("no /healthz answer: \(answer)")
                    }
                    health.append(monotonicSeconds() - sent)
                }
                let probed = monotonicSeconds() - started
                let written = writer.readResponses(1, timeout: 10)
                return (monotonicSeconds() - started, probed, HTTP1Response.parseAll(written.bytes).responses.first?.status, health)
            }
            print("slow store write: \(Int(measured.write * 1000)) ms; /healthz meanwhile: "
                + measured.health.map { String(format: "%.1f ms", $0 * 1000) }.joined(separator: ", "))
            #expect(measured.status == 201)
            // The write waited for the lock while every probe was answered.
            #expect(measured.write >= 0.3)
            #expect(measured.write > measured.probed, "the probes ended after the write: \(measured)")
            // A few ms each on an idle machine; the bound leaves room for a loaded CI runner.
            #expect(measured.health.max()! < 0.15, "\(measured.health)")
        }
    }

    /// A store failure (here SQLite's "no such table") is answered 500 `internal` with an id; the
    /// error's text, which can carry SQL, is only in the server's log, under that id.
    @Test func internalErrorsAreLoggedWithAnIDAndNeverSent() async throws {
        try await withServer { sandbox in
            let dropped = try await run("/usr/bin/env", args: ["python3", "-c", """
                import sqlite3, sys
                sqlite3.connect(sys.argv[1], isolation_level=None).execute("DROP TABLE devices")
                """, sandbox.dataDirectory + "/sandbox.sqlite"])
            try #require(dropped.status == 0, "\(dropped)")
            let output = try await curl(["-w", "\n%{http_code}", sandbox.httpBase + "/api/v1/devices"])
            let text = output.stdoutText
            #expect(text.hasSuffix("\n500"), "\(text)")
            #expect(text.contains("\"code\":\"internal\""), "\(text)")
            #expect(!text.lowercased().contains("no such table"), "\(text)")
            #expect(!text.contains("sqlite") && !text.contains("SELECT"), "\(text)")
            let id = try #require(text.firstMatch(of: /error\.id=([0-9a-f]{12})/)?.1)
            let logged = sandbox.logSink.capturedLines.filter { $0.contains(String(id)) }
            #expect(logged.count == 1, "\(sandbox.logSink.capturedLines)")
            #expect(logged.first?.contains("no such table") == true, "\(logged)")
            #expect(logged.first?.contains("/api/v1/devices") == true, "\(logged)")
        }
    }
}
