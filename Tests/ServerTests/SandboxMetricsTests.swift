// APNs Sandbox — the switches that pick SandboxMetrics' pre-resolved children land on the right labels.
import APNsProtocol
import Sandbox
@testable import Server
import Testing

@Suite struct SandboxMetricsTests {
    /// Every APNs reason counts on its own `reason` label (the switch numbers them as the labels were made).
    @Test func everyReasonCountsOnItsOwnLabel() {
        let metrics = SandboxMetrics()
        for (index, reason) in APNsReason.allCases.enumerated() {
            for _ in 0...index { metrics.pushes.countAuthFailure(reason) }
        }
        let text = metrics.registry.exposition()
        for (index, reason) in APNsReason.allCases.enumerated() {
            #expect(text.contains("apns_sandbox_provider_auth_failures_total{reason=\"\(reason.rawValue)\"} \(index + 1)\n"),
                    "\(reason)")
        }
    }

    /// Every fault action kind counts on its `kind` label; nothing shows before it is applied.
    @Test func everyFaultActionCountsOnItsKind() {
        let metrics = SandboxMetrics()
        #expect(!metrics.registry.exposition().contains("apns_sandbox_faults_applied_total{"))
        let actions: [FaultAction] = [
            .reject(.unregistered, timestamp: 5), .goAway(reason: "Shutdown", errorCode: 2), .resetStream(errorCode: 8),
            .closeConnection, .stall(milliseconds: 10), .trickle(bytesPerChunk: 4, intervalMilliseconds: 9),
            .limitConcurrentStreams(to: 2, milliseconds: 50), .deliver(.lose), .deliver(.deliverLate(milliseconds: 70)),
            .deliver(.extensionCrash), .deliver(.extensionTimeout), .none,
        ]
        for (index, action) in actions.enumerated() {
            for _ in 0...index { metrics.faultApplied(action) }
        }
        let text = metrics.registry.exposition()
        for (index, action) in actions.enumerated() {
            #expect(text.contains("apns_sandbox_faults_applied_total{action=\"\(action.kind)\"} \(index + 1)\n"), "\(action)")
        }
    }

    /// Each extension kind × outcome has its own counter, and each kind its own histogram.
    @Test func everyExtensionKindAndOutcomeCountsApart() {
        let metrics = SandboxMetrics()
        for kind in ExtensionKind.allCases {
            for outcome in DisplayOutcome.allCases { metrics.extensionEnded(kind: kind, outcome: outcome, seconds: 0.25) }
        }
        metrics.extensionEnded(kind: .exec, outcome: .originalCrash, seconds: 2)
        let text = metrics.registry.exposition()
        for kind in ExtensionKind.allCases {
            for outcome in DisplayOutcome.allCases {
                let count = kind == .exec && outcome == .originalCrash ? 2 : 1
                #expect(text.contains(
                    "apns_sandbox_extension_runs_total{kind=\"\(kind.rawValue)\",outcome=\"\(outcome.rawValue)\"} \(count)\n"))
            }
            let observed = kind == .exec ? DisplayOutcome.allCases.count + 1 : DisplayOutcome.allCases.count
            #expect(text.contains("apns_sandbox_extension_duration_seconds_count{kind=\"\(kind.rawValue)\"} \(observed)\n"))
        }
    }

    /// The extension kind comes from the configuration text, `invalid` when it does not parse, and is kept per text.
    @Test func extensionKindsFromConfigurationText() {
        let kinds = ExtensionKinds(limit: 2)
        let builtin = #"{"kind":"builtin","steps":[]}"#
        #expect(kinds.kind(of: builtin) == .builtin)
        #expect(kinds.kind(of: builtin) == .builtin)
        #expect(kinds.kind(of: #"{"kind":"webhook","url":"http://127.0.0.1:9/x"}"#) == .webhook)
        #expect(kinds.kind(of: #"{"kind":"exec","path":"/bin/true"}"#) == .exec)
        #expect(kinds.kind(of: #"{"kind":"nope"}"#) == .invalid)
        #expect(kinds.kind(of: nil) == .invalid)
        #expect(kinds.kind(of: builtin) == .builtin, "after the table started over")
    }
}
