// APNs Sandbox — the sandbox's metric families (docs/metrics.md), updated where the information flows.
import Events
import Metrics
import Sandbox
import Synchronization

/// The families the server updates as things happen; those read at scrape time are registered by
/// `SandboxServer+Metrics.swift`. Built with the server; every child that a hot path touches is resolved
/// here or on first use of a rare label value (a fault's action, an extension's kind and outcome).
final class SandboxMetrics: Sendable {
    let registry: MetricsRegistry
    let pushes: PushCounters
    /// Provider connections open now (that sent at least one push) and since the start.
    let providerConnectionsOpen: Gauge
    let providerConnections: Counter
    /// Pushes received and not answered yet (waiting for their commit or a fault's latency).
    let pushesWaiting: Gauge
    let notificationsFinal: CounterFamily
    private let finalByStatus: [NotificationStatus: Counter]
    let extensionRuns: CounterFamily
    let extensionDuration: HistogramFamily
    let attachmentsAccepted: Counter
    let attachmentsDropped: Counter
    let webhookAttempts: CounterFamily
    let faultsApplied: CounterFamily
    let storeCommitDuration: HistogramFamily

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        pushes = PushCounters(registry: registry)
        providerConnectionsOpen = registry.gauge(
            "apns_sandbox_provider_connections_open", help: "Provider connections open now that sent at least one push."
        ).labels()
        providerConnections = registry.counter(
            "apns_sandbox_provider_connections_total", help: "Provider connections that sent at least one push."
        ).labels()
        pushesWaiting = registry.gauge(
            "apns_sandbox_provider_pushes_waiting",
            help: "Pushes received and not answered yet: waiting for their commit or a fault's latency (provider streams in flight)."
        ).labels()
        notificationsFinal = registry.counter(
            "apns_sandbox_notifications_final_total",
            help: "Notifications that reached a final status (displayed, delivered-silent, expired, discarded).",
            labels: ["status"])
        var finalByStatus: [NotificationStatus: Counter] = [:]
        for status in NotificationStatus.allCases where status.isFinal {
            finalByStatus[status] = notificationsFinal.labels(status.rawValue)
        }
        self.finalByStatus = finalByStatus
        extensionRuns = registry.counter(
            "apns_sandbox_extension_runs_total",
            help: "Service extension instances that ended, by kind (builtin, exec, webhook) and outcome.",
            labels: ["kind", "outcome"])
        extensionDuration = registry.histogram(
            "apns_sandbox_extension_duration_seconds",
            help: "Time from an extension's start to its outcome, on the sandbox clock, by kind.", labels: ["kind"])
        let attachments = registry.counter(
            "apns_sandbox_extension_attachments_total",
            help: "Attachments extensions handed over (downloaded or written), by result: accepted or dropped.",
            labels: ["result"])
        attachmentsAccepted = attachments.labels("accepted")
        attachmentsDropped = attachments.labels("dropped")
        webhookAttempts = registry.counter(
            "apns_sandbox_webhook_attempts_total",
            help: "Webhook delivery attempts, by outcome: succeeded, retry (failed, another attempt is scheduled), failed (the last).",
            labels: ["outcome"])
        for outcome in ["succeeded", "retry", "failed"] { _ = webhookAttempts.labels(outcome) }
        faultsApplied = registry.counter(
            "apns_sandbox_faults_applied_total", help: "Fault rules applied to pushes, by action.", labels: ["action"])
        storeCommitDuration = registry.histogram(
            "apns_sandbox_store_commit_duration_seconds",
            help: "Duration of the store's write transactions (BEGIN IMMEDIATE to COMMIT), by database.",
            labels: ["database"])
    }

    /// A record of the delivery engine was committed (`DeliveryEngine.onChange`): counts it once it is final.
    func notificationChanged(_ record: NotificationRecord) {
        guard record.status.isFinal else { return }
        finalByStatus[record.status]?.increment()
    }

    /// A webhook attempt's result, as the dispatcher records it.
    func webhookAttempted(_ result: WebhookAttemptResult) {
        let outcome = switch result.status {
        case .succeeded: "succeeded"
        case .pending: "retry"
        case .failed: "failed"
        }
        webhookAttempts.labels(outcome).increment()
    }
}

/// Counts a provider connection from its first push to its end (``ProviderConnection``'s life).
final class ProviderConnectionTracker: Sendable {
    private let metrics: SandboxMetrics

    init(_ metrics: SandboxMetrics) {
        self.metrics = metrics
        metrics.providerConnections.increment()
        metrics.providerConnectionsOpen.increment()
    }

    deinit {
        metrics.providerConnectionsOpen.decrement()
    }
}
