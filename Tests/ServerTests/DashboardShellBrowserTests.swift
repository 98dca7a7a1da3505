// APNs Sandbox — the dashboard's shell in a real browser (Tests/Python/dashboard_shell.py).
import Foundation
@testable import Server
import Testing

/// Headless chromium: the page loads and goes live, every view is reachable by keyboard with visible focus,
/// the theme toggles and stays, nothing scrolls sideways at phone width, and every request the page made is
/// in the OpenAPI document with no console error (dashboard_harness.py checks both after each scenario).
@Suite struct DashboardShellBrowserTests {
    @Test func shellWorksOnLoopbackWithoutAToken() async throws {
        try await withServer { server in
            let output = try await runBrowserScenarios("dashboard_shell.py", on: server)
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            let passed = output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("ok ") }
            #expect(passed.count == 5, "\(output.stdoutText)")
        }
    }

    /// With the admin token required the page asks for it, refuses a wrong one, keeps the right one in the tab's
    /// session storage only (no cookie), and no request URL carries it.
    @Test func shellAsksForTheAdminToken() async throws {
        let token = "dashboard-admin-token-0123456789"
        try await withServer(configure: { $0.admin.authentication = .required; $0.admin.token = token }) { server in
            let output = try await runBrowserScenarios("dashboard_shell.py", on: server, arguments: ["--admin-token", token])
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            #expect(output.stdoutText.contains("ok wrong_token_is_refused"), "\(output.stdoutText)")
        }
    }
}
