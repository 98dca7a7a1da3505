// APNs Sandbox — a device token used again: the new device's online state counts, not the old one's.
import Foundation
import Testing

@Suite struct DeviceRecreationTests {
    /// A device that received a push (the delivery engine knows it, online), deleted — or removed by a reset — and
    /// created again offline: the next push is stored, not shown.
    @Test(arguments: ["delete", "reset"]) func recreatedOfflineDeviceStoresPushes(_ removal: String) async throws {
        try await withServer { server in
            let api = "\(server.httpBase)/api/v1"
            let token = String(repeating: "be", count: 32)
            let first = try await pushAlert(server, device: token)
            #expect(try await apiRequest("GET", "\(api)/notifications/\(first)?wait=8").json?["status"] as? String == "displayed")
            if removal == "delete" {
                #expect(try await apiRequest("DELETE", "\(api)/devices/\(token)").status == 204)
            } else {
                #expect(try await apiRequest("POST", "\(api)/reset").status == 200)
            }
            let created = try await apiRequest("POST", "\(api)/devices", #"{"token":"\#(token)","apps":["\#(testTopic)"],"online":false}"#)
            #expect(created.status == 201, "\(created)")
            let second = try await pushAlert(server, device: token)
            // Its first state after `accepted`, however long a loaded machine takes to get there.
            let status = try await pollFor("the second push to leave `accepted`") {
                let status = try await apiRequest("GET", "\(api)/notifications/\(second)").json?["status"] as? String ?? ""
                return status == "accepted" || status.isEmpty ? nil : status
            }
            #expect(status == "stored")
        }
    }
}
