// APNs Sandbox — the notification service extension runtime: one fresh instance per notification.
import APNsProtocol
import Dispatch
import Foundation
import Glibc
import HTTPClient
import Sandbox
import Support
import Synchronization

/// Runs apps' notification service extensions as iOS does (Apple: UNNotificationServiceExtension; docs/extension-protocol.md).
///
/// ### Overview
/// Each ``run(_:original:device:app:reporting:)`` makes a **fresh instance** for that notification from the
/// app's ``ExtensionConfiguration`` (builtin steps, an exec process, or a webhook). `didReceive` starts the
/// budget (30 s by default; the app's `budgetMs`; the `apns-sandbox-extension-budget-ms` push header when
/// ``RuntimeConfiguration/allowBudgetHeader`` is on). At the budget `timeWillExpire` is delivered, and content
/// within the grace period is a `best-attempt`; otherwise the original is shown (`original-timeout`). The first
/// content wins, later calls are noted. Content without alert text, errors and crashes (memory included) show
/// the original. The completion is called exactly once for every call, with the timeline of what happened.
///
/// ### Isolation
/// Instances share nothing mutable: each has its own state, driver and temporary directory. What they share
/// on purpose is the app-group directory (per app per device) and the device keychain (read-only here).
///
/// ### Threads
/// Bounded, whatever the number of instances: ``RuntimeConfiguration/workerCount`` serial queues run instance
/// work; budgets, grace periods, step timeouts and delays are timers on the injected clock; exec processes are
/// started on ``RuntimeConfiguration/launcherCount`` threads of their own (``Launcher``: a spawn blocks its
/// thread until the child has exec'd, and must never hold up a worker) and served by one ``ProcessReactor``
/// thread (pipes, reaping, memory); HTTP goes through one ``HTTPClient`` (one transfer thread, started by
/// the first request). No thread ever blocks waiting for an instance.
///
/// ### Processes never outlive the server
/// Exec processes die with the server even when it is killed with SIGKILL (``ProcessRegistry``: PDEATHSIG
/// for each extension process, a guardian process for their children, a ledger in the data directory that
/// the next start reads to kill what is left, before the delivery engine's recovery runs).
public final class ExtensionRuntime: ReportingServiceExtensionRunner {
    public let configuration: RuntimeConfiguration
    private let clock: any SandboxClock
    private let logger: Logger
    private let workers: [DispatchQueue]
    private let reactor: ProcessReactor
    private let launcher: Launcher
    private let registry: ProcessRegistry
    private let directories: InstanceDirectories
    private let http: HTTPClient
    private let counter = Atomic<UInt64>(0)
    private let instancePrefix: String
    private let isStarted = Atomic<Bool>(false)

    private struct Slots {
        var running = 0
        var waiting = FIFOQueue<@Sendable () -> Void>()
        var live: [String: Instance] = [:]
        var isShutDown = false
    }

    private let slots = Locked(Slots())

    /// - Parameters:
    ///   - configuration: Directories, defaults and limits.
    ///   - clock: Time for budgets, grace periods, step timeouts and timeline stamps (``ManualClock`` in tests).
    ///   - logger: Debug lines per instance; warnings for problems of the runtime itself.
    ///
    /// Builds the runtime without touching the data directory or starting anything: ``start()`` does that.
    public init(configuration: RuntimeConfiguration, clock: any SandboxClock, logger: Logger) {
        var configuration = configuration
        // Every path the runtime builds (instance directories, downloads, attachments) is absolute: a relative
        // data directory (the default `./data`) was joined twice when a download was resolved against the
        // instance's directory, and every attachment was dropped.
        if !configuration.dataDirectory.hasPrefix("/") {
            configuration.dataDirectory = FileManager.default.currentDirectoryPath + "/" + configuration.dataDirectory
        }
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        // 64 connections per host, as the URLSession it replaced had: a burst of downloads from one media host
        // must not take every file descriptor the listeners need.
        http = HTTPClient(configuration: HTTPClient.Configuration(
            threadName: "nse-http", maxConnectionsPerHost: 64, caFile: configuration.caFile))
        workers = (0..<max(1, configuration.workerCount)).map {
            DispatchQueue(label: "apns-sandbox.extension.worker-\($0)")
        }
        let instances = configuration.dataDirectory + "/instances"
        let ledger = instances + "/" + Self.ledgerName
        registry = ProcessRegistry(
            ledgerPath: ledger, guardian: configuration.usesProcessGuardian ? ProcessGuardian.shared : nil)
        reactor = ProcessReactor(intervalMilliseconds: configuration.processSampleIntervalMilliseconds,
                                 registry: registry)
        launcher = Launcher(queues: configuration.launcherCount)
        directories = InstanceDirectories(root: instances)
        // Unique per run, not only per pid: the next start finds this run's processes by it.
        var random = SystemRandomNumberGenerator()
        instancePrefix = String(UInt32(truncatingIfNeeded: getpid()), radix: 36) + "-"
            + String(UInt32.random(in: 0...UInt32.max, using: &random), radix: 36)
    }

    /// Makes the data directory ready for this run's instances; call it once, before the first ``run``.
    ///
    /// Kills what an earlier run's exec extensions left running (its ledger, ``ProcessRegistry``; logged as a
    /// warning), removes its instance directories (`<data>/instances`), opens this run's ledger, and sets
    /// SIGPIPE to be ignored for the process (a write to an extension that closed its stdin must fail with
    /// EPIPE, not kill the server). Start the runtime before the delivery engine recovers, so that no process
    /// of an interrupted instance still runs when that instance is finalised. Later calls do nothing.
    ///
    /// No thread starts here: the process launchers and the process reactor start theirs with the first
    /// exec instance.
    public func start() {
        guard !isStarted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let instances = configuration.dataDirectory + "/instances"
        let ledger = registry.ledgerPath
        let leftovers = ProcessRegistry.killLeftovers(ledgerPath: ledger)
        if leftovers.groupsKilled + leftovers.processesKilled > 0 {
            logger.warning("exec extension processes left by a previous run were killed", [
                ("extension.records", String(leftovers.records)),
                ("extension.groups_killed", String(leftovers.groupsKilled)),
                ("extension.processes_killed", String(leftovers.processesKilled)),
            ])
        } else if leftovers.records > 0 {
            // E.g. killed at a shutdown but not reaped before the exit: nothing of them runs any more.
            logger.debug("the previous run's exec extension processes are all gone",
                         [("extension.records", String(leftovers.records))])
        }
        FileSystem.removeTree(instances)
        try? FileSystem.makeDirectories(instances)
        registry.openLedger()
        signal(SIGPIPE, SIG_IGN)
    }

    /// The ledger of live exec processes in `<data>/instances` (a dot name: never an instance's directory).
    static let ledgerName = ".processes"

    /// Instances running now.
    public var runningInstanceCount: Int { slots.withLock { $0.running } }

    /// Instances waiting for a free slot, or (exec) for a process launcher.
    public var waitingInstanceCount: Int {
        slots.withLock { $0.waiting.count } + launcher.waitingCount
    }

    /// Exec processes not yet reaped.
    public var processCount: Int { reactor.count }

    // MARK: ServiceExtensionRunner

    public func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        reporting completion: @escaping @Sendable (ExtensionResult) -> Void
    ) {
        let number = counter.add(1, ordering: .relaxed).newValue
        let queue = workers[Int(number % UInt64(workers.count))]
        let id = "\(instancePrefix)-\(number)"
        var notes: [TimelineEntry] = []
        func note(_ step: ExtensionTimelineStep, _ detail: String) {
            notes.append(TimelineEntry(step: step.rawValue, at: clock.nowMilliseconds,
                                       monotonic: clock.monotonicNanoseconds, detail: detail))
        }
        func fallBack(_ problem: String) {
            note(.error, problem)
            let result = ExtensionResult(outcome: .originalError, content: original, timeline: notes)
            queue.async { completion(result) }
        }

        guard let json = app.serviceExtensionJSON else {
            fallBack("\(app.bundleID) has no service extension configured")
            return
        }
        let extensionConfiguration: ExtensionConfiguration
        do {
            extensionConfiguration = try ExtensionConfiguration(json: json)
        } catch {
            fallBack("\(error)")
            return
        }
        var budget = extensionConfiguration.budgetMilliseconds ?? configuration.defaultBudgetMilliseconds
        if let header = record.headers.first(where: { $0.name == RuntimeConfiguration.budgetHeader }) {
            let value = header.value
            if !configuration.allowBudgetHeader {
                note(.budgetHeader, "\(RuntimeConfiguration.budgetHeader): \(value) ignored (not enabled in the configuration)")
            } else if let milliseconds = Int64(value.trimmingCharacters(in: .whitespaces)),
                (1...ExtensionConfiguration.maxBudgetMilliseconds).contains(milliseconds)
            {
                budget = milliseconds
                note(.budgetHeader, "budget \(milliseconds) ms from \(RuntimeConfiguration.budgetHeader)")
            } else {
                note(.budgetHeader, "\(RuntimeConfiguration.budgetHeader): \"\(value)\" ignored (not 1 to "
                     + "\(ExtensionConfiguration.maxBudgetMilliseconds) ms)")
            }
        }
        let payload = (try? JSON.parse(record.payload)) ?? .object([])
        let context = InstanceContext(
            id: id, record: record, original: original, device: device, app: app,
            configuration: extensionConfiguration, budgetMilliseconds: budget,
            graceMilliseconds: extensionConfiguration.graceMilliseconds ?? configuration.defaultGraceMilliseconds,
            request: ExtensionContent(original: original, payload: payload),
            paths: InstancePaths(dataDirectory: configuration.dataDirectory, instanceID: id, record: record),
            settings: configuration)
        let driver: any InstanceDriver
        if let (fault, applied) = record.deliveryFault, fault == .extensionCrash || fault == .extensionTimeout {
            driver = ForcedOutcomeDriver(fault: fault, applied: applied)
        } else {
            switch extensionConfiguration.kind {
            case .builtin(let steps):
                driver = BuiltinDriver(steps: steps, request: context.request, http: http)
            case .exec(let settings):
                if let problem = configuration.execPolicy.problem(
                    running: settings.path, searchPath: settings.environment["PATH"] ?? ExecPolicy.defaultSearchPath)
                {
                    fallBack(problem)
                    return
                }
                driver = ExecDriver(settings: settings, reactor: reactor, launcher: launcher, registry: registry)
            case .webhook(let settings):
                driver = RemoteExtensionDriver(settings: settings, http: http)
            }
        }
        let instance = Instance(
            context: context, queue: queue, clock: clock,
            logger: logger.with("extension.instance", id), driver: driver, directories: directories,
            initialTimeline: notes,
            completion: completion, onFinished: { [weak self] in self?.finished(id) })
        admit(instance, driver: driver)
    }

    /// Ends every running instance with its fallback (`original-error`, noted) and kills exec processes;
    /// waiting and later runs complete at once the same way. For server shutdown.
    public func shutdown() {
        let (live, waiting) = slots.withLock { slots -> ([Instance], [@Sendable () -> Void]) in
            slots.isShutDown = true
            let waiting = slots.waiting.removeAll()
            slots.running += waiting.count
            return (Array(slots.live.values), waiting)
        }
        for instance in live {
            instance.queue.async { instance.fail(.error("the extension runtime is shutting down")) }
        }
        for start in waiting { start() }
        // Transfers still in flight end as failures (their instances were just failed); the thread ends.
        http.shutdown()
    }

    // MARK: Slots

    private func admit(_ instance: Instance, driver: any InstanceDriver) {
        let enqueuedAt = clock.monotonicNanoseconds
        let start: @Sendable (Bool) -> Void = { [weak self] queued in
            guard let self else { return }
            let isShutDown = self.slots.withLock { slots -> Bool in
                if !slots.isShutDown { slots.live[instance.context.id] = instance }
                return slots.isShutDown
            }
            if queued {
                let waited = (self.clock.monotonicNanoseconds &- enqueuedAt) / 1_000_000
                instance.note(.queued, "waited \(waited) ms for a free slot "
                              + "(\(self.configuration.maxConcurrentInstances) instances at most)")
            }
            guard !isShutDown else {
                instance.queue.async { instance.fail(.error("the extension runtime is shutting down")) }
                return
            }
            driver.whenReady(instance) { instance.start() }
        }
        let startsNow = slots.withLock { slots -> Bool in
            if slots.running < configuration.maxConcurrentInstances || slots.isShutDown {
                slots.running += 1
                return true
            }
            slots.waiting.append { start(true) }
            return false
        }
        if startsNow { start(false) }
    }

    private func finished(_ id: String) {
        let next = slots.withLock { slots -> (@Sendable () -> Void)? in
            slots.live[id] = nil
            guard let next = slots.waiting.popFirst() else {
                slots.running -= 1
                return nil
            }
            return next
        }
        next?()
    }
}
