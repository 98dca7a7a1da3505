// APNs Sandbox — every GOAWAY the sandbox sends carries Apple's debug data shape, `{"reason":"…"}`,
// as real clients read it.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct GoAwayReasonTests {
    /// Runs Tests/Python/h2_goaway_reason.py (the `h2` library, as aioapns and httpx use it) and decodes its report.
    private func goAwayAsReadByH2(_ probe: ChildProcess) async throws -> [String: Any] {
        let output = await offload { probe.finish(timeout: 30) }
        #expect(output.status == 0, "\(output)")
        let line = output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
        return try #require(jsonObject(line), "\(output)")
    }

    /// An idle connection's GOAWAY (NO_ERROR) carries `{"reason":"IdleTimeout"}`, as h2 reports it.
    @Test func idleTimeoutGoAwaySaysIdleTimeout() async throws {
        try await withServer(configure: { $0.limits.idleTimeoutSeconds = 1 }) { server in
            let probe = try ChildProcess("python3", arguments: [
                TestPaths.goawayReason, "--port", "\(server.httpPort)", "--requests", "1", "--timeout", "20",
            ])
            let report = try await goAwayAsReadByH2(probe)
            #expect(report["answered"] as? Int == 1, "\(report)")
            #expect(report["errorCode"] as? Int == 0, "NO_ERROR: \(report)")
            #expect(report["lastStreamID"] as? Int == 1, "\(report)")
            #expect(report["additionalData"] as? String == #"{"reason":"IdleTimeout"}"#, "\(report)")
            #expect(report["closed"] as? Bool == true, "\(report)")
        }
    }

    /// On shutdown the first GOAWAY (the notice, the one h2-based clients act on) carries `{"reason":"Shutdown"}`.
    @Test func shutdownNoticeSaysShutdown() async throws {
        try await withServer { server in
            let probe = try ChildProcess("python3", arguments: [
                TestPaths.goawayReason, "--port", "\(server.httpPort)", "--requests", "2", "--timeout", "25",
            ])
            // (Python and h2 can take seconds to start while the whole suite runs.)
            let deadline = monotonicSeconds() + 20
            while !probe.currentStderr.contains("ready"), monotonicSeconds() < deadline, probe.wait(timeout: 0) == nil {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            try #require(probe.currentStderr.contains("ready"), "the client's requests were answered: \(probe.currentStderr)")
            await server.shutdown()
            let report = try await goAwayAsReadByH2(probe)
            #expect(report["answered"] as? Int == 2, "\(report)")
            #expect(report["errorCode"] as? Int == 0, "NO_ERROR: \(report)")
            #expect(report["lastStreamID"] as? Int == 0x7FFF_FFFF, "the shutdown notice comes first: \(report)")
            #expect(report["additionalData"] as? String == #"{"reason":"Shutdown"}"#, "\(report)")
            #expect(report["reason"] as? String == "Shutdown", "\(report)")
        }
    }

    /// Rapid reset past `streamResetBurst`: GOAWAY ENHANCE_YOUR_CALM with `{"reason":"TooManyStreamResets"}`.
    @Test func rapidResetGoAwaySaysTooManyStreamResets() async throws {
        try await withServer(configure: {
            $0.limits.streamResetBurst = 5
            $0.limits.streamResetsPerSecond = 1
        }) { server in
            let output = try await run("python3", args: [
                TestPaths.hostilePeer, "rapid-reset", "--port", "\(server.httpPort)", "--pairs", "50", "--path", "/healthz",
            ], timeout: 20)
            let report = try #require(jsonObject(output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""), "\(output)")
            #expect(report["goaway"] as? Int == 11, "ENHANCE_YOUR_CALM: \(report)")
            #expect(report["goawayDebugData"] as? String == #"{"reason":"TooManyStreamResets"}"#, "\(report)")
            #expect(report["closedAfter"] is Double, "the server closed the connection: \(report)")
        }
    }

    /// DATA on a stream reset after an early 413, past `discardedDataBurstBytes`: GOAWAY ENHANCE_YOUR_CALM
    /// with `{"reason":"TooMuchDataOnClosedStreams"}`.
    @Test func discardedDataGoAwaySaysTooMuchDataOnClosedStreams() async throws {
        try await withServer(configure: {
            $0.limits.maxBodyBytes = 65_536
            $0.limits.discardedDataBurstBytes = 1 << 20
            $0.limits.discardedDataBytesPerSecond = 65_536
        }) { server in
            let output = try await run("python3", args: [
                TestPaths.hostilePeer, "upload", "--port", "\(server.httpPort)", "--path", "/upload",
                "--body-bytes", "\(1 << 20)", "--seconds", "10",
            ], timeout: 30)
            let report = try #require(jsonObject(output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""), "\(output)")
            #expect(report["status"] as? String == "413", "\(report)")
            #expect(report["goaway"] as? Int == 11, "ENHANCE_YOUR_CALM: \(report)")
            #expect(report["goawayDebugData"] as? String == #"{"reason":"TooMuchDataOnClosedStreams"}"#, "\(report)")
        }
    }
}
