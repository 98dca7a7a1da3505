// APNs Sandbox — devices that pushes auto-register are there for the API as soon as the push is answered.
import Foundation
import Testing

@Suite struct DeviceRegistrationTests {
    /// 20,000 pushes to new tokens over 16 connections, each followed at once by a GET or PATCH of its
    /// device: never a 404 (the device commits no later than the push), and the device count matches.
    @Test func autoRegisteredDeviceIsVisibleRightAfterThePush() async throws {
        try await withServer(configure: { $0.storage.synchronous = "normal" }) { server in
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/tests/python/new_tokens_probe.py", "--port", "\(server.httpPort)",
                "--token", server.providerToken, "--count", "20000", "--connections", "16",
            ], timeout: 120)
            try #require(output.status == 0, "\(output)")
            let result = try #require(jsonObject(output.stdout), "\(output)")
            #expect(result["pushes"] as? Int == 20_000)
            #expect(result["pushFailures"] as? Int == 0, "\(result)")
            #expect(result["apiCalls"] as? Int == 20_000)
            #expect(result["missing"] as? Int == 0, "\(result)")
            let devices = try await apiRequest("GET", server.httpBase + "/api/v1/devices?limit=1")
            #expect(devices.status == 200)
        }
    }
}
