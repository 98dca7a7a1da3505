// APNs Sandbox — the sandbox's metric families (docs/metrics.md), updated where the information flows.
import Events
import Metrics
import Sandbox
import Synchronization

/// The families the server updates as things happen; those read at scrape time are registered by
/// `SandboxServer+Metrics.swift`. Built with the server; every child that a hot path touches is resolved
/// here, once, and picked by a `switch` or an index (a fault's action, an extension's kind and outcome, a
/// webhook attempt's outcome): no label array, family lock or dictionary per event.
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
    /// By ``ExtensionKind`` position × ``DisplayOutcome`` position (`outcomePosition(_:)`).
    private let extensionRuns: [Counter]
    /// By ``ExtensionKind`` position.
    private let extensionDurations: [Histogram]
    let attachmentsAccepted: Counter
    let attachmentsDropped: Counter
    private let webhookSucceeded: Counter
    private let webhookRetry: Counter
    private let webhookFailed: Counter
    /// By `faultPosition(_:)`.
    private let faultsApplied: [Counter]
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
        let runs = registry.counter(
            "apns_sandbox_extension_runs_total",
            help: "Service extension instances that ended, by kind (builtin, exec, webhook) and outcome.",
            labels: ["kind", "outcome"], omitsZeros: true)
        let outcomes = DisplayOutcome.allCases.sorted { Self.outcomePosition($0) < Self.outcomePosition($1) }
        precondition(outcomes.enumerated().allSatisfy { $0 == Self.outcomePosition($1) }, "outcome positions")
        precondition(ExtensionKind.allCases.enumerated().allSatisfy { $0 == $1.position }, "extension kind positions")
        extensionRuns = ExtensionKind.allCases.flatMap { kind in outcomes.map { runs.labels(kind.rawValue, $0.rawValue) } }
        let durations = registry.histogram(
            "apns_sandbox_extension_duration_seconds",
            help: "Time from an extension's start to its outcome, on the sandbox clock, by kind.", labels: ["kind"],
            omitsEmpty: true)
        extensionDurations = ExtensionKind.allCases.map { durations.labels($0.rawValue) }
        let attachments = registry.counter(
            "apns_sandbox_extension_attachments_total",
            help: "Attachments extensions handed over (downloaded or written), by result: accepted or dropped.",
            labels: ["result"])
        attachmentsAccepted = attachments.labels("accepted")
        attachmentsDropped = attachments.labels("dropped")
        let webhookAttempts = registry.counter(
            "apns_sandbox_webhook_attempts_total",
            help: "Webhook delivery attempts, by outcome: succeeded, retry (failed, another attempt is scheduled), failed (the last).",
            labels: ["outcome"])
        webhookSucceeded = webhookAttempts.labels("succeeded")
        webhookRetry = webhookAttempts.labels("retry")
        webhookFailed = webhookAttempts.labels("failed")
        let faults = registry.counter(
            "apns_sandbox_faults_applied_total", help: "Fault rules applied to pushes, by action.", labels: ["action"],
            omitsZeros: true)
        precondition(Self.faultKinds.enumerated().allSatisfy { $0 == Self.faultPosition($1) }, "fault positions")
        faultsApplied = Self.faultKinds.map { faults.labels($0.kind) }
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
        switch result.status {
        case .succeeded: webhookSucceeded.increment()
        case .pending: webhookRetry.increment()
        case .failed: webhookFailed.increment()
        }
    }

    /// A fault rule was applied to a push (on the event loop): one atomic add.
    func faultApplied(_ action: FaultAction) {
        faultsApplied[Self.faultPosition(action)].increment()
    }

    /// An extension instance of `kind` ended with `outcome` after `seconds` on the sandbox clock.
    func extensionEnded(kind: ExtensionKind, outcome: DisplayOutcome, seconds: Double) {
        extensionDurations[kind.position].observe(seconds)
        extensionRuns[kind.position * Self.outcomeCount + Self.outcomePosition(outcome)].increment()
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
