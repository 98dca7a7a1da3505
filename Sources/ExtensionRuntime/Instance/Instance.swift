// APNs Sandbox — one extension instance: the shell that runs its state machine, timers and ending.
import Dispatch
import Sandbox
import Support
import Synchronization

/// What an instance was given; immutable.
struct InstanceContext: Sendable {
    let id: String
    let record: NotificationRecord
    let original: DisplayedContent
    let device: DeviceRecord
    let app: AppRecord
    let configuration: ExtensionConfiguration
    let budgetMilliseconds: Int64
    let graceMilliseconds: Int64
    /// The request's content (`original` plus the whole payload as `userInfo`).
    let request: ExtensionContent
    let paths: InstancePaths
    let settings: RuntimeConfiguration

    /// `request.identifier`: the `apns-collapse-id`, else the apns-id (§3.6).
    var requestIdentifier: String { record.collapseID ?? record.apnsID }
}

/// The kind-specific part of an instance: builtin steps, an exec process, a webhook call.
///
/// Every method but ``whenReady(_:_:)`` is called on the instance's queue. A driver reports back through the
/// instance (``Instance/contentHandlerCalled(_:)``, ``Instance/fail(_:)``, ``Instance/note(_:_:)``) from any
/// thread.
protocol InstanceDriver: Sendable {
    /// Before `didReceive` (from any thread): calls `ready` once the instance may start, e.g. once an exec
    /// process can be launched; not at all when the instance ends first.
    func whenReady(_ instance: Instance, _ ready: @escaping @Sendable () -> Void)
    /// `didReceive`: start working on the request.
    func start(_ instance: Instance)
    /// `serviceExtensionTimeWillExpire`.
    func timeWillExpire(_ instance: Instance)
    /// The outcome is decided: stop the extension (kill, cancel), letting late output be noted, then call
    /// `done` exactly once.
    func settle(_ instance: Instance, decision: InstanceStateMachine.Decision, done: @escaping @Sendable () -> Void)
}

extension InstanceDriver {
    /// Ready at once.
    func whenReady(_ instance: Instance, _ ready: @escaping @Sendable () -> Void) { ready() }
}

/// One fresh instance per notification (architecture.md, "Extension instances").
///
/// ### Lifecycle
/// ``start()`` notes `extension-started`, arms the budget timer on the injected clock and starts the driver.
/// The budget and the grace period are deadlines from the start (budget, then budget + grace), not from when
/// the work before them ran: a clock that jumps past both (a virtual clock advanced by 31 s) runs both.
/// Events (content, failures, the budget and grace timers) go through ``InstanceStateMachine``; its first
/// decision cancels the timers and asks the driver to ``InstanceDriver/settle(_:decision:done:)``. Then the
/// content's attachments are validated and moved, the completion is called (exactly once), the temporary
/// directory is removed and the runtime is told the slot is free. A real-time watchdog ends the instance
/// anyway if the driver does not settle in time, so a notification is never left unfinished.
///
/// ### Threading
/// Any thread may report events; state sits in a `Locked` held only for bookkeeping, never while calling the
/// driver or the completion. Timer and driver work hops to `queue`, one of the runtime's serial workers.
final class Instance: Sendable {
    let context: InstanceContext
    let queue: DispatchQueue
    let clock: any SandboxClock
    let logger: Logger
    private let driver: any InstanceDriver
    private let directories: InstanceDirectories
    private let completion: @Sendable (ExtensionResult) -> Void
    private let onFinished: @Sendable () -> Void

    private struct State {
        var machine = InstanceStateMachine()
        var timeline: [TimelineEntry] = []
        var budgetTimer: ScheduledTask?
        var graceTimer: ScheduledTask?
        /// Monotonic time of `didReceive`: the budget and the grace period count from here.
        var startedAt: UInt64 = 0
        var isFinished = false
        var hasTemporaryDirectory = false
        var watchdog: WorkItem?
    }

    private let state = Locked(State())

    /// `@unchecked Sendable`: `DispatchWorkItem.cancel()` is thread-safe; the item is only cancelled here.
    private struct WorkItem: @unchecked Sendable {
        let item: DispatchWorkItem
    }

    init(
        context: InstanceContext, queue: DispatchQueue, clock: any SandboxClock, logger: Logger,
        driver: any InstanceDriver, directories: InstanceDirectories, initialTimeline: [TimelineEntry],
        completion: @escaping @Sendable (ExtensionResult) -> Void, onFinished: @escaping @Sendable () -> Void
    ) {
        self.context = context
        self.queue = queue
        self.clock = clock
        self.logger = logger
        self.driver = driver
        self.directories = directories
        self.completion = completion
        self.onFinished = onFinished
        state.withLock { $0.timeline = initialTimeline }
    }

    // MARK: Start

    /// `didReceive`: starts the budget and the driver (on the instance's queue).
    func start() {
        let configuration = context.configuration
        var detail = "\(configuration.kind.name), instance \(context.id), budget \(context.budgetMilliseconds) ms, "
            + "grace \(context.graceMilliseconds) ms"
        if configuration.memoryLimitMB > 0 { detail += ", memory limit \(configuration.memoryLimitMB) MiB" }
        let startedAt = clock.monotonicNanoseconds
        note(.started, detail)
        let budget = clock.schedule(atMonotonicNanoseconds: startedAt + Self.nanoseconds(context.budgetMilliseconds)) {
            [self] in queue.async { self.budgetElapsed() }
        }
        let keep = state.withLock { state -> Bool in
            guard state.machine.phase == .running else { return false }
            state.startedAt = startedAt
            state.budgetTimer = budget
            return true
        }
        if !keep { budget.cancel() }
        queue.async { [self] in
            guard !isDecided else { return }
            driver.start(self)
        }
    }

    // MARK: Reports from the driver

    /// True once the outcome is fixed.
    var isDecided: Bool { state.withLock { $0.machine.phase == .decided } }

    /// True while `timeWillExpire` has been delivered and no outcome is fixed yet.
    var isExpiring: Bool { state.withLock { $0.machine.phase == .expiring } }

    /// Adds a timeline entry stamped with the clock, or with the earlier monotonic instant `at` (a timer's
    /// deadline); dropped once the result has been handed over.
    func note(_ step: ExtensionTimelineStep, _ detail: String? = nil, at instant: UInt64? = nil) {
        var (wall, monotonic) = (clock.nowMilliseconds, clock.monotonicNanoseconds)
        if let instant, instant < monotonic {
            wall -= Int64(clamping: (monotonic - instant) / 1_000_000)
            monotonic = instant
        }
        let entry = TimelineEntry(step: step.rawValue, at: wall, monotonic: monotonic, detail: detail)
        let kept = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            state.timeline.append(entry)
            return true
        }
        if !kept {
            logger.debug("extension event after the end", [("extension.instance", context.id),
                                                            ("event", step.rawValue), ("detail", detail ?? "")])
        }
    }

    /// The extension handed content to its content handler.
    func contentHandlerCalled(_ content: ExtensionContent) {
        let action = state.withLock { $0.machine.contentHandlerCalled(content) }
        switch action {
        case .decide(let decision):
            note(.handlerCalled, Self.describe(content, outcome: decision.outcome))
        case .ignored(let why):
            note(.handlerIgnored, why)
        case .none, .deliverTimeWillExpire:
            break
        }
        perform(action)
    }

    /// The extension failed (`original-error`) or crashed (`original-crash`); noted as `step`
    /// (default `extension-error` / `extension-crashed`).
    func fail(_ failure: InstanceStateMachine.Failure, as step: ExtensionTimelineStep? = nil) {
        switch failure {
        case .error(let message): note(step ?? .error, message)
        case .crash(let message): note(step ?? .crashed, message)
        }
        perform(state.withLock { $0.machine.failed(failure) })
    }

    // MARK: Timers

    private func budgetElapsed() {
        let action = state.withLock { state -> InstanceStateMachine.Action in
            state.budgetTimer = nil
            return state.machine.budgetElapsed()
        }
        perform(action)
    }

    private func graceElapsed() {
        let action = state.withLock { state -> InstanceStateMachine.Action in
            state.graceTimer = nil
            return state.machine.graceElapsed()
        }
        perform(action)
    }

    private func perform(_ action: InstanceStateMachine.Action) {
        switch action {
        case .none, .ignored:
            break
        case .deliverTimeWillExpire:
            let startedAt = state.withLock { $0.startedAt }
            let budgetEnd = startedAt + Self.nanoseconds(context.budgetMilliseconds)
            note(.timeWillExpire, "budget of \(context.budgetMilliseconds) ms used up; "
                 + "\(context.graceMilliseconds) ms of grace", at: budgetEnd)
            let graceEnd = budgetEnd + Self.nanoseconds(context.graceMilliseconds)
            let grace = clock.schedule(atMonotonicNanoseconds: graceEnd) { [self] in
                queue.async { self.graceElapsed() }
            }
            let keep = state.withLock { state -> Bool in
                guard state.machine.phase == .expiring else { return false }
                state.graceTimer = grace
                return true
            }
            if !keep { grace.cancel() }
            queue.async { [self] in
                guard isExpiring else { return }
                driver.timeWillExpire(self)
            }
        case .decide(let decision):
            let timers = state.withLock { state -> [ScheduledTask?] in
                defer {
                    state.budgetTimer = nil
                    state.graceTimer = nil
                }
                return [state.budgetTimer, state.graceTimer]
            }
            for timer in timers { timer?.cancel() }
            settle(decision)
        }
    }

    private static func nanoseconds(_ milliseconds: Int64) -> UInt64 {
        UInt64(clamping: max(0, milliseconds)) &* 1_000_000
    }

    // MARK: Ending

    private func settle(_ decision: InstanceStateMachine.Decision) {
        let watchdogMilliseconds = context.settings.settleMilliseconds + 2_000
        // Real time, not the clock's: it bounds how long a real process and real I/O take to stop, and a
        // frozen virtual clock must never leave a notification unfinished.
        let watchdog = DispatchWorkItem { [self] in finish(decision, watchdog: true) }
        state.withLock { $0.watchdog = WorkItem(item: watchdog) }
        queue.asyncAfter(deadline: .now() + .milliseconds(watchdogMilliseconds), execute: watchdog)
        queue.async { [self] in
            driver.settle(self, decision: decision) { [self] in
                queue.async { self.finish(decision, watchdog: false) }
            }
        }
    }

    /// Validates and moves the attachments, hands the result over (once), removes the temporary directory.
    private func finish(_ decision: InstanceStateMachine.Decision, watchdog: Bool) {
        guard !state.withLock({ $0.isFinished }) else { return }
        if watchdog {
            note(.error, "the extension did not stop within \(context.settings.settleMilliseconds + 2_000) ms "
                 + "of its end; finished without it")
        }
        var content = context.original
        if let extensionContent = decision.content {
            let attachments = AttachmentStore(paths: context.paths).accept(
                extensionContent.attachments, note: { self.note($0, $1) })
            content = extensionContent.displayed(original: context.original, requestUserInfo: context.request.userInfo,
                                                 attachments: attachments)
        }
        let ending = state.withLock { state -> (timeline: [TimelineEntry], watchdog: WorkItem?)? in
            guard !state.isFinished else { return nil }
            state.isFinished = true
            defer { state.watchdog = nil }
            return (state.timeline, state.watchdog)
        }
        guard let (timeline, watchdogItem) = ending else { return }
        if !watchdog { watchdogItem?.item.cancel() }
        // The instance is gone before the device shows anything: its directory first, then the result.
        if state.withLock({ $0.hasTemporaryDirectory }) {
            directories.recycle(context.paths.temporaryDirectory)
        }
        completion(ExtensionResult(outcome: decision.outcome, content: content, timeline: timeline))
        onFinished()
    }

    // MARK: Directories

    /// The instance's temporary directory, created on first use.
    /// - Throws: ``FileSystemError`` when it cannot be created.
    func temporaryDirectory() throws -> String {
        let path = context.paths.temporaryDirectory
        let created = state.withLock { state -> Bool in
            defer { state.hasTemporaryDirectory = true }
            return state.hasTemporaryDirectory
        }
        if !created { try directories.make(path) }
        return path
    }

    /// The app-group container, created on first use (shared by the app's instances on this device).
    func appGroupDirectory() throws -> String {
        try FileSystem.makeDirectories(context.paths.appGroupDirectory)
        return context.paths.appGroupDirectory
    }

    private static func describe(_ content: ExtensionContent, outcome: DisplayOutcome) -> String {
        var parts: [String] = []
        for (name, value) in [("title", content.title), ("subtitle", content.subtitle), ("body", content.body)]
        where !(value ?? "").isEmpty {
            parts.append(name)
        }
        var text = parts.isEmpty ? "content without alert text" : "content with " + parts.joined(separator: ", ")
        if !content.attachments.isEmpty { text += ", \(content.attachments.count) attachment(s)" }
        return text + " → \(outcome.rawValue)"
    }
}
