// APNs Sandbox — the families read at scrape time: queue depth, backlog, streams, files, the process, the build.
import Events
import ExtensionRuntime
import Metrics
import Sandbox
import Store

extension SandboxServer {
    /// The version `apns_sandbox_build_info` reports (the command line's `version` says the same).
    public static let version = "0.1.0"

    /// What the scraped families read.
    struct ScrapeSources {
        let stores: Stores
        let eventHub: EventStreamHub
        let extensions: ExtensionRuntime
    }

    /// Registers the families read at scrape time (on the scraping worker) and sends the stores' commit
    /// durations to `apns_sandbox_store_commit_duration_seconds`. A count the store cannot give (a read fails)
    /// leaves its sample out rather than reporting 0.
    static func registerScrapedMetrics(_ metrics: SandboxMetrics, _ sources: ScrapeSources) {
        let registry = metrics.registry
        let store = sources.stores.store
        let outbox = sources.stores.outbox
        let storeCommits = metrics.storeCommitDuration.labels("store")
        store.observeCommits { storeCommits.observe($0) }
        let outboxCommits = metrics.storeCommitDuration.labels("webhooks")
        outbox.observeCommits { outboxCommits.observe($0) }

        registry.scraped("apns_sandbox_build_info", help: "The running build: always 1, its version as a label.",
                         labels: ["version"]) { [(values: [version], value: 1)] }
        let queued: [NotificationStatus] = [.accepted, .stored, .delivering, .extensionRunning]
        registry.scraped(
            "apns_sandbox_delivery_queue_depth", help: "Notifications not final yet, by status (read from the store).",
            labels: ["status"]
        ) {
            queued.compactMap { status in
                (try? store.count(matching: NotificationFilter(status: status))).map { (values: [status.rawValue], value: Double($0)) }
            }
        }
        registry.scraped(
            "apns_sandbox_webhook_retry_backlog", help: "Webhook deliveries waiting for a retry after a failed attempt."
        ) { (try? outbox.retryingDeliveryCount()).map(Double.init) }
        let hub = sources.eventHub
        registry.scraped("apns_sandbox_sse_subscribers", help: "Open event streams (SSE) of /api/v1/events.") {
            Double(hub.openStreams)
        }
        let extensions = sources.extensions
        registry.scraped(
            "apns_sandbox_extension_instances", help: "Service extension instances now, running or waiting for a slot.",
            labels: ["state"]
        ) {
            [(values: ["running"], value: Double(extensions.runningInstanceCount)),
             (values: ["waiting"], value: Double(extensions.waitingInstanceCount))]
        }
        let files = sources.stores.files
        if let journal = sources.stores.journal { registerJournalMetrics(registry, journal) }
        registry.scraped(
            "apns_sandbox_database_size_bytes", help: "Size of each SQLite database's main file and write-ahead log.",
            labels: ["database", "file"]
        ) {
            files.flatMap { name, path in
                [(values: [name, "main"], value: ProcessStatistics.fileSize(path)),
                 (values: [name, "wal"], value: ProcessStatistics.fileSize(path + "-wal"))]
            }
        }
        registerProcessMetrics(registry)
    }

    /// The memory journal's families (`storage.mode` `memory`): what it keeps and what its bound dropped.
    private static func registerJournalMetrics(_ registry: MetricsRegistry, _ journal: MemoryStore) {
        registry.scraped(
            "apns_sandbox_journal_entries", help: "What the memory journal keeps (storage.mode memory).", labels: ["kind"]
        ) {
            let counts = journal.journal
            return [(values: ["notifications"], value: Double(counts.notifications)),
                    (values: ["events"], value: Double(counts.events))]
        }
        registry.scraped(
            "apns_sandbox_journal_dropped_total", type: .counter,
            help: "Entries the memory journal dropped to stay within storage.memory (the oldest first).", labels: ["kind"]
        ) {
            let counts = journal.journal
            return [(values: ["notifications"], value: Double(counts.droppedNotifications)),
                    (values: ["events"], value: Double(counts.droppedEvents))]
        }
    }

    /// The `/proc/self` families. A value that cannot be read is left out of the scrape, never reported as 0
    /// (a CPU counter at 0 would read as a restart).
    private static func registerProcessMetrics(_ registry: MetricsRegistry) {
        registry.scraped("apns_sandbox_process_resident_memory_bytes", help: "Resident memory (VmRSS).") {
            ProcessStatistics.residentBytes
        }
        registry.scraped("apns_sandbox_process_cpu_seconds_total", type: .counter, help: "User and system CPU time.") {
            ProcessStatistics.cpuSeconds
        }
        registry.scraped("apns_sandbox_process_open_fds", help: "Open file descriptors.") {
            ProcessStatistics.openDescriptors
        }
        registry.scraped("apns_sandbox_process_threads", help: "Threads of the process.") {
            ProcessStatistics.threads
        }
    }
}
