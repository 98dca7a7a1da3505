// APNs Sandbox — devices that pushes auto-register are there for the API as soon as the push is answered.
import Foundation
import Testing

@Suite struct DeviceRegistrationTests {
    /// 20,000 pushes to new tokens over 16 connections, each followed at once by a GET or PATCH of its
    /// device: never a 404 (the device commits no later than the push), and the device count matches.
    @Test func autoRegisteredDeviceIsVisibleRightAfterThePush() async throws {
        try await withServer(configure: { $0.storage.synchronous = .normal }) { server in
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/new_tokens_probe.py", "--port", "\(server.httpPort)",
                "--token", server.providerToken, "--count", "20000", "--connections", "16",
            ], timeout: 120)
            try #require(output.status == 0, "\(output)")
            let result = try #require(jsonObject(output.stdout), "\(output)")
            #expect(result["pushes"] as? Int == 20_000)
            #expect(result["pushFailures"] as? Int == 0, "\(result)")
            #expect(result["apiCalls"] as? Int == 20_000)
            #expect(result["missing"] as? Int == 0, "\(result)")
            // Committed, not only cached: the database file itself holds every device.
            let count = try await run("/usr/bin/env", args: [
                "python3", "-c",
                "import sqlite3, sys; print(sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True).execute('SELECT count(*) FROM devices').fetchone()[0])",
                server.dataDirectory + "/sandbox.sqlite",
            ])
            #expect(count.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "20000", "\(count)")
        }
    }

    /// A device whose write failed (the store full) is not left in memory only: once the store has room, the
    /// next push to its token registers it again, and the API finds it after that push's 200.
    @Test func deviceWhoseWriteFailedIsRegisteredByTheNextPush() async throws {
        try await withServer(configure: {
            $0.storage.synchronous = .normal
            $0.storage.maxSizeMB = 0.5
        }) { server in
            let base = server.httpBase
            // Fill the store until pushes fail.
            let fill = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/new_tokens_probe.py", "--port", "\(server.httpPort)",
                "--token", server.providerToken, "--count", "3000", "--connections", "4", "--mode", "push",
            ], timeout: 120)
            #expect((jsonObject(fill.stdout)?["pushFailures"] as? Int ?? 0) > 0, "the store never filled: \(fill)")
            let tokens = (0..<10).map { String(format: "%02x", 0x40 + $0) + String(repeating: "e7", count: 31) }
            for token in tokens {
                #expect(try await pushAlert(server, device: token).isEmpty, "a push to a full store was answered 200")
            }
            _ = try await apiRequest("DELETE", base + "/api/v1/notifications?all=true")
            var ready = false
            for _ in 0..<100 where !ready {
                ready = (try await apiRequest("GET", base + "/readyz")).status == 200
                if !ready { try await Task.sleep(nanoseconds: 100_000_000) }
            }
            try #require(ready, "the store did not get room back")
            for token in tokens {
                let apnsID = try await pushAlert(server, device: token)
                #expect(!apnsID.isEmpty)
                let device = try await apiRequest("GET", base + "/api/v1/devices/\(token)")
                #expect(device.status == 200, "\(token): pushed 200, device \(device.status)")
            }
        }
    }
}
