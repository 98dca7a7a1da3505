// APNs Sandbox — the dashboard's working views in a real browser (tests/python/dashboard_views.py).
import Foundation
@testable import Server
import Testing

/// Headless chromium against a real server: a push sent from the Send form arrives on the device (checked through
/// the API) and its "copy as curl" text, run with bash, is accepted too; the Inbox lists a notification and a
/// rejected push with its reason, a filter narrows it and new rows come live; Apps & devices creates a device;
/// a Steering fault preset rejects the next push. dashboard_harness.py checks every request the page made
/// against the OpenAPI document, and that nothing was logged to the console.
@Suite struct DashboardViewsBrowserTests {
    @Test func viewsWorkInABrowser() async throws {
        try await withServer { server in
            let output = try await runBrowserScenarios("dashboard_views.py", on: server, timeout: 240)
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            let passed = output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("ok ") }
            #expect(passed.count == 4, "\(output.stdoutText)")
        }
    }
}
