// APNs Sandbox — running the dashboard's browser scenarios (Tests/Python/dashboard_*.py) against a test server.
import Foundation

/// Runs `Tests/Python/<script>` (selenium, headless Debian chromium) against `server`'s cleartext listener, with
/// the server's provider token and topic; `arguments` go after them (e.g. `--admin-token`). The script prints
/// `ok <scenario>` per scenario and exits non-zero when one failed; screenshots of the last run are kept in
/// a temporary directory named in the output.
func runBrowserScenarios(
    _ script: String, on server: TestServer, arguments: [String] = [], timeout: Double = 120
) async throws -> ProcessOutput {
    let screenshots = try makeTemporaryDirectory("apns-dashboard-screenshots")
    var output = try await run("/usr/bin/env", args: [
        "python3", TestPaths.packageRoot + "/Tests/Python/" + script, "--base", server.httpBase,
        "--provider-token", server.providerToken, "--topic", testTopic, "--screenshots", screenshots,
    ] + arguments, timeout: timeout)
    output.stdout.append(Data("screenshots: \(screenshots)\n".utf8))
    return output
}
