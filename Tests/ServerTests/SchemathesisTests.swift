// APNs Sandbox — schemathesis (PyPI) against the OpenAPI document of the REST API.
import Foundation
import TestProcessSupport
import Testing

/// Runs the schemathesis CLI against a real in-process server: every operation of
/// `/api/v1/openapi.json` is fuzzed (positive and negative data, then stateful sequences) and every
/// response must be a non-5xx with a documented status code, content type and body shape.
///
/// schemathesis comes from Tests/Python/requirements.txt (`scripts/setup --test`); without it this
/// test fails rather than skips. Two seeded runs of 10–20 s each on two cores (each killed after 180 s).
@Suite(.scaledTimeLimit(minutes: 8))
struct SchemathesisTests {
    /// The checks of the issue: no server error, and responses exactly as documented.
    static let checks = "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance"

    /// The event stream never ends, so it is left out. The long-poll parameters are pinned small: the document allows up to 300 s (the server does too),
    /// and one generated `timeout=250` would hold a request for minutes. The cache and the example
    /// database are off so that no run depends on what an earlier one found (and nothing is written
    /// to the working directory).
    static let configuration = """
        [cache]
        enabled = false

        [generation]
        database = "none"

        [[operations]]
        include-name = "GET /api/v1/notifications/wait"
        parameters = { "query.timeout" = 0.2 }

        [[operations]]
        include-name = "GET /api/v1/notifications/{apnsId}"
        parameters = { "query.wait" = 0.2 }

        # APNs' provider API (described for the dashboard): Apple's rules, covered by the provider tests.
        [[operations]]
        include-name = "POST /3/device/{deviceToken}"
        enabled = false

        # An endless text/event-stream: covered by EventsEndToEndTests instead.
        [[operations]]
        include-name = "GET /api/v1/events"
        enabled = false

        """

    @Test func openAPIDocumentHoldsUnderSchemathesis() async throws {
        let probe = try await run("/usr/bin/env", args: [
            "python3", "-c", "import schemathesis, importlib.metadata as m; print(m.version('schemathesis'))",
        ], timeout: 60)
        guard probe.status == 0 else {
            Issue.record("""
                schemathesis is not installed for python3 (pip install -r Tests/Python/requirements.txt, \
                or scripts/setup --test): \(probe)
                """)
            return
        }

        // A virtual clock, so that the clock's changes are fuzzed too (not only their 409 without one).
        try await withServer(configure: { $0.clock.virtual = true }) { server in
            try await seed(server)
            let work = try makeTemporaryDirectory("apns-sandbox-schemathesis")
            defer { try? FileManager.default.removeItem(atPath: work) }
            let configFile = work + "/schemathesis.toml"
            try Self.configuration.write(toFile: configFile, atomically: true, encoding: .utf8)
            let version = probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)

            // First the read-only operations, while the seeded records exist (a generated
            // `DELETE /api/v1/notifications?all=true` of the full run removes them): the stateful phase
            // follows the list's links to real records, stored ones included (`wait` parks the request).
            try await schemathesis(server, configFile: configFile, work: work, version: version, ["--include-method", "GET"])
            // Then every operation.
            try await schemathesis(server, configFile: configFile, work: work, version: version, [])
        }
    }

    /// One bounded, seeded schemathesis run against the server's cleartext port; records an issue
    /// with the tail of its report unless it exits 0 having tested every selected operation.
    private func schemathesis(
        _ server: TestServer, configFile: String, work: String, version: String, _ extra: [String]
    ) async throws {
        let start = monotonicSeconds()
        let output = try await run("/usr/bin/env", args: [
            "python3", "-m", "schemathesis.cli", "--config-file", configFile,
            "run", server.httpBase + "/api/v1/openapi.json",
            "--checks", Self.checks,
            "--max-examples", "30", "--seed", "20261130",
            "--request-timeout", "10", "--suppress-health-check", "all",
            // One worker: with two, Python 3.11's ast.parse (hypothesis describing its lambdas) races
            // between threads now and then ("AST constructor recursion depth mismatch", CPython gh-106905).
            "--workers", "1", "--no-color",
        ] + extra, timeout: 180, environment: [
            // Hypothesis keeps caches in ./.hypothesis unless told otherwise.
            "HYPOTHESIS_STORAGE_DIRECTORY": work + "/hypothesis",
            "NO_COLOR": "1", "COLUMNS": "120",
        ])
        let seconds = Int(monotonicSeconds() - start)
        let text = output.stdoutText + output.stderrText
        let tail = String(text.suffix(12_000))
        let label = "schemathesis \(version) \(extra.joined(separator: " "))"

        #expect(!output.timedOut, "\(label) did not finish in 180 s:\n\(tail)")
        #expect(output.status == 0, "\(label) failed (status \(output.status), \(seconds) s):\n\(tail)")
        // Every selected operation was tested (none skipped or errored before a request), and
        // the full run selects every documented operation but those the configuration turns off.
        if let match = text.firstMatch(of: #/Selected: (\d+)/(\d+)\s+Tested: (\d+)/#) {
            #expect(match.1 == match.3 && (Int(match.3) ?? 0) > 0, "\(label): not every selected operation was tested:\n\(tail)")
            let disabled = Self.configuration.components(separatedBy: "include-name").dropFirst().filter { $0.contains("enabled = false") }.count
            #expect(!extra.isEmpty || (Int(match.1) ?? 0) + disabled == Int(match.2), "\(label): operations were left out:\n\(tail)")
        } else {
            Issue.record("\(label): no summary in the output:\n\(tail)")
        }
        if output.status != 0 || output.timedOut { print(tail) }
    }

    /// Gives the fuzzer real records to read: pushes to an online device (final records with
    /// displayed content) and to an offline one (stored, not final), so response shapes are checked
    /// against real notifications, not only empty lists.
    private func seed(_ server: TestServer) async throws {
        let offline = String(repeating: "cd", count: 32)
        let create = try await curl([
            "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", server.httpBase + "/api/v1/devices",
            "-H", "content-type: application/json",
            "-d", #"{"token":"\#(offline)","online":false,"apps":["\#(testTopic)"]}"#,
        ])
        #expect(create.stdoutText == "201", "creating the offline device: \(create)")

        let payloads = [
            #"{"aps":{"alert":{"title":"Hello","subtitle":"Sub","body":"World"},"badge":3,"sound":"default","thread-id":"t1","category":"c"},"key":"value"}"#,
            #"{"aps":{"content-available":1},"n":1.5}"#,
            #"{"aps":{"alert":"Plain","badge":0}}"#,
        ]
        for (index, payload) in payloads.enumerated() {
            for token in [deviceToken, offline] {
                let pushed = try await curl([
                    "--http1.1", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                    server.httpBase + "/3/device/\(token)",
                    "-H", server.authorizationHeader, "-H", "apns-topic: \(testTopic)",
                    "-H", "apns-push-type: \(index == 1 ? "background" : "alert")",
                    "-H", "apns-priority: \(index == 1 ? 5 : 10)",
                    "-H", "apns-collapse-id: seed-\(index)",
                    "-d", payload,
                ])
                #expect(pushed.stdoutText == "200", "seeding push \(index) to \(token): \(pushed)")
            }
        }
    }
}
