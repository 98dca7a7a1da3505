// APNs Sandbox — extension outcomes and durations, counted around the runtime the delivery engine calls.
import ExtensionRuntime
import Metrics
import Sandbox

/// Runs extensions through `runner` and counts each instance's end: `apns_sandbox_extension_runs_total{kind,
/// outcome}` and `apns_sandbox_extension_duration_seconds{kind}` (start to outcome, on the sandbox clock, so a
/// virtual clock's jump counts as the time it covers). The kind comes from the app's configuration
/// (`builtin`, `exec`, `webhook`; `invalid` when it does not parse). The attachments an instance handed over
/// (downloaded or written) count in `apns_sandbox_extension_attachments_total{result}`: kept or dropped.
struct MeasuredExtensionRunner: ReportingServiceExtensionRunner {
    let runner: any ReportingServiceExtensionRunner
    let metrics: SandboxMetrics
    let clock: any SandboxClock

    func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        reporting completion: @escaping @Sendable (ExtensionResult) -> Void
    ) {
        let kind = Self.kind(of: app.serviceExtensionJSON)
        let started = clock.monotonicNanoseconds
        let metrics = self.metrics
        let clock = self.clock
        runner.run(record, original: original, device: device, app: app) { (result: ExtensionResult) in
            let seconds = Double(clock.monotonicNanoseconds &- started) / 1_000_000_000
            metrics.extensionDuration.labels(kind).observe(seconds)
            metrics.extensionRuns.labels(kind, result.outcome.rawValue).increment()
            for entry in result.timeline {
                if entry.step == ExtensionTimelineStep.attachmentAccepted.rawValue {
                    metrics.attachmentsAccepted.increment()
                } else if entry.step == ExtensionTimelineStep.attachmentDropped.rawValue {
                    metrics.attachmentsDropped.increment()
                }
            }
            completion(result)
        }
    }

    static func kind(of json: String?) -> String {
        guard let json, let configuration = try? ExtensionConfiguration(json: json) else { return "invalid" }
        switch configuration.kind {
        case .builtin: return "builtin"
        case .exec: return "exec"
        case .webhook: return "webhook"
        }
    }
}
