// APNs Sandbox — extension outcomes and durations, counted around the runtime the delivery engine calls.
import ExtensionRuntime
import Metrics
import Sandbox
import Synchronization
import Support

/// Runs extensions through `runner` and counts each instance's end: `apns_sandbox_extension_runs_total{kind,
/// outcome}` and `apns_sandbox_extension_duration_seconds{kind}` (start to outcome, on the sandbox clock, so a
/// virtual clock's jump counts as the time it covers). The kind comes from the app's configuration
/// (`builtin`, `exec`, `webhook`; `invalid` when it does not parse), parsed once per configuration text
/// (``ExtensionKinds``), not at every run. The attachments an instance handed over (downloaded or written) count
/// in `apns_sandbox_extension_attachments_total{result}`: kept or dropped.
struct MeasuredExtensionRunner: ReportingServiceExtensionRunner {
    let runner: any ReportingServiceExtensionRunner
    let metrics: SandboxMetrics
    let clock: any SandboxClock
    let kinds = ExtensionKinds()

    func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        reporting completion: @escaping @Sendable (ExtensionResult) -> Void
    ) {
        let kind = kinds.kind(of: app.serviceExtensionJSON)
        let started = clock.monotonicNanoseconds
        let metrics = self.metrics
        let clock = self.clock
        runner.run(record, original: original, device: device, app: app) { (result: ExtensionResult) in
            let seconds = Double(clock.monotonicNanoseconds &- started) / 1_000_000_000
            metrics.extensionEnded(kind: kind, outcome: result.outcome, seconds: seconds)
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

    static func kind(of json: String?) -> ExtensionKind {
        guard let json, let configuration = try? ExtensionConfiguration(json: json) else { return .invalid }
        switch configuration.kind {
        case .builtin: return .builtin
        case .exec: return .exec
        case .webhook: return .webhook
        }
    }
}

/// The kind of each configuration text seen, so that a run looks it up instead of parsing and validating the
/// JSON again (the runtime parses it for itself). Apps are few: past `limit` texts the table starts over.
final class ExtensionKinds: Sendable {
    private let known = Locked<[String: ExtensionKind]>([:])
    let limit: Int

    init(limit: Int = 256) {
        self.limit = limit
    }

    func kind(of json: String?) -> ExtensionKind {
        guard let json else { return .invalid }
        if let kind = known.withLock({ $0[json] }) { return kind }
        let kind = MeasuredExtensionRunner.kind(of: json)
        known.withLock { known in
            if known.count >= limit { known.removeAll() }
            known[json] = kind
        }
        return kind
    }
}
