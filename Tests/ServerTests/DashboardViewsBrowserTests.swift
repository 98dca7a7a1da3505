// APNs Sandbox — the dashboard's working views in a real browser (Tests/Python/dashboard_views.py).
import Foundation
@testable import Server
import Testing

/// Headless chromium against a real server: a push sent from the Send form arrives on the device (checked through
/// the API) and its "copy as curl" text, run with bash, is accepted too; the Inbox lists a notification and a
/// rejected push with its reason (a refused token with its cause beside it), a filter narrows it and new rows come live; Apps & devices creates a device;
/// a Steering fault preset rejects the next push, and the clock's controls are disabled with the reason. dashboard_harness.py checks every request the page made
/// against the OpenAPI document, and that nothing was logged to the console.
@Suite struct DashboardViewsBrowserTests {
    @Test func viewsWorkInABrowser() async throws {
        try await withServer { server in
            let output = try await runBrowserScenarios("dashboard_views.py", on: server, timeout: 240)
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            let passed = output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("ok ") }
            #expect(passed.count == 5, "\(output.stdoutText)")
        }
    }

    /// With the admin token required: the page signs in, sends from the form, and its curl names the token only as
    /// `$APNS_SANDBOX_ADMIN_TOKEN` (the test runs it with that variable set).
    @Test func sendWorksWithTheAdminTokenRequired() async throws {
        let token = "dashboard-views-admin-token-0123456789"
        try await withServer(configure: { $0.admin.authentication = .required; $0.admin.token = token }) { server in
            let output = try await runBrowserScenarios("dashboard_views.py", on: server,
                                                       arguments: ["--admin-token", token, "--scenario", "send_from_the_form"])
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            #expect(output.stdoutText.contains("ok send_from_the_form"), "\(output.stdoutText)")
        }
    }

    /// With `clock.virtual` the Steering view freezes, advances and resets the clock (and the top bar follows).
    @Test func steeringMovesAVirtualClock() async throws {
        try await withServer(configure: { $0.clock.virtual = true }) { server in
            let output = try await runBrowserScenarios("dashboard_views.py", on: server, arguments: ["--scenario", "steer_clock"])
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            #expect(output.stdoutText.contains("ok steer_clock"), "\(output.stdoutText)")
        }
    }
}
