// APNs Sandbox — the dashboard's Devices view and notification detail in a real browser (Tests/Python/dashboard_devices.py).
import Foundation
@testable import Server
import Testing

/// Headless chromium: a push sent with curl over h2c appears on its device's lock screen without a reload within
/// 1 s of the 200; its detail shows the timeline and the outcome in words; a device taken offline in the page stores
/// a push and shows it once back online; an extension that hangs past a 300 ms budget reads as a timeout; the locale
/// picker saves; nothing scrolls sideways at phone width; an attached image (attach-media from a local server) shows
/// as a thumbnail on the lock screen and in the detail. dashboard_harness.py checks every request the page made
/// against the OpenAPI document and that there was no console error.
@Suite struct DashboardDevicesBrowserTests {
    @Test func lockScreensAndNotificationDetail() async throws {
        try await withServer { server in
            let output = try await runBrowserScenarios("dashboard_devices.py", on: server)
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            let passed = output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("ok ") }
            #expect(passed.count == 5, "\(output.stdoutText)")
            #expect(output.stdoutText.contains("ok push_appears_live_and_detail_tells_its_story"), "\(output.stdoutText)")
        }
    }
}
