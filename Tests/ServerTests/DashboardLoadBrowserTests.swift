// APNs Sandbox — the dashboard under load in a real browser (Tests/Python/dashboard_load.py, issue #15).
import Foundation
@testable import Server
import Testing

/// With 10,000 notifications in the store (pushed by h2load over h2c) the Devices view and the Inbox draw their
/// data (best of three loads; the 300 ms target is reported, a 1.5 s guard asserted: this server is a debug
/// build on shared cores, `scripts/bench-dashboard` measures the release build), each lock screen says how many
/// notifications it left out, and 1,000 live notifications a second for 5 s leave no gap of a second between
/// frames and the last push on its lock screen within 3 s. The script prints the figures (`# …` lines) that
/// BENCHMARKS.md reports.
@Suite struct DashboardLoadBrowserTests {
    @Test func dashboardStaysFastWithTenThousandNotificationsAndALiveBurst() async throws {
        try await withServer { server in
            let output = try await runBrowserScenarios("dashboard_load.py", on: server, timeout: 180)
            print(output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("# ") }.joined(separator: "\n"))
            #expect(output.status == 0, "\(output.stdoutText)\(output)")
            let passed = output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("ok ") }
            #expect(passed.count == 3, "\(output.stdoutText)")
        }
    }
}
