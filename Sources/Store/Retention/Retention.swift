// APNs Sandbox — pruning old notification records, events and finished webhook deliveries, once a minute.
import Dispatch
import Sandbox
import Support
import Synchronization

/// Prunes old notification records, events and finished webhook deliveries every
/// ``Settings/intervalMilliseconds`` (storage.maxRecords/maxAgeDays, events.maxEvents/maxAgeHours,
/// webhooks.deliveryRetentionDays), from ``start()`` until ``stop()``.
///
/// The timer is the clock's: nothing is scheduled before ``start()``, and after ``stop()`` the pending pass is
/// cancelled and none is scheduled again. A pass runs on a queue of its own (`retention`), and the next one is
/// scheduled when it ends: SQL never holds up the clock's queue, and a clock that jumps days ahead (a virtual
/// clock advanced) makes one pass, not one per interval on the way; ``pruneSoon()`` then prunes at the new time.
public final class Retention: Sendable {
    /// What is kept: counts and ages in milliseconds.
    public struct Settings: Sendable, Equatable {
        /// Notification records kept at most (the oldest go first).
        public var maxRecords: Int
        /// Notification records received longer ago than this go.
        public var maxRecordAgeMilliseconds: Int64
        /// Events kept at most.
        public var maxEvents: Int
        /// Events older than this go (unless a webhook subscription has not been fed them yet).
        public var maxEventAgeMilliseconds: Int64
        /// Webhook deliveries finished longer ago than this go.
        public var deliveryRetentionMilliseconds: Int64
        /// How often a pass runs.
        public var intervalMilliseconds: Int64 = 60_000

        public init(
            maxRecords: Int, maxRecordAgeMilliseconds: Int64, maxEvents: Int, maxEventAgeMilliseconds: Int64,
            deliveryRetentionMilliseconds: Int64
        ) {
            self.maxRecords = maxRecords
            self.maxRecordAgeMilliseconds = maxRecordAgeMilliseconds
            self.maxEvents = maxEvents
            self.maxEventAgeMilliseconds = maxEventAgeMilliseconds
            self.deliveryRetentionMilliseconds = deliveryRetentionMilliseconds
        }
    }

    private struct State {
        var task: ScheduledTask?
        var isStarted = false
        var isStopped = false
    }

    private let state = Locked(State())
    private let work = DispatchQueue(label: "retention", qos: .utility)
    private let store: any SandboxStore
    private let outbox: any OutboxStore
    private let clock: any SandboxClock
    private let settings: Settings
    private let logger: Logger
    /// Removes the attachment files of pruned records.
    private let attachments: AttachmentSweeper

    /// - Parameters:
    ///   - store: The notification records and the event log.
    ///   - outbox: The webhook subscriptions (their cursors keep events) and deliveries.
    ///   - clock: Time and the timer.
    ///   - settings: What is kept.
    ///   - attachments: Told about every pruned record, to remove its files.
    ///   - logger: Counts pruned (info) and failures (warning).
    public init(
        store: any SandboxStore, outbox: any OutboxStore, clock: any SandboxClock, settings: Settings,
        attachments: AttachmentSweeper, logger: Logger
    ) {
        self.store = store
        self.outbox = outbox
        self.clock = clock
        self.settings = settings
        self.attachments = attachments
        self.logger = logger
    }

    /// Arms the timer: the first pass runs one interval from now. Later calls do nothing.
    public func start() {
        let starts = state.withLock { state -> Bool in
            guard !state.isStarted, !state.isStopped else { return false }
            state.isStarted = true
            return true
        }
        if starts { schedule() }
    }

    /// Cancels the pending pass; none is scheduled again (a pass running now finishes). Idempotent.
    public func stop() {
        let task = state.withLock { state -> ScheduledTask? in
            state.isStopped = true
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        work.sync {}  // a pass under way ends before the stores close
    }

    /// A pass soon, on the retention queue (after the clock jumped: what the jump made old goes now, not an
    /// interval later). Nothing before ``start()`` or after ``stop()``.
    public func pruneSoon() {
        guard state.withLock({ $0.isStarted && !$0.isStopped }) else { return }
        work.async { [self] in
            guard !state.withLock({ $0.isStopped }) else { return }
            prune()
        }
    }

    /// Whether a pass is scheduled (after ``start()``, before ``stop()``).
    public var isScheduled: Bool { state.withLock { $0.task != nil } }

    private func schedule() {
        // Under the lock, so that a concurrent `stop()` either sees the task or keeps it from being made.
        state.withLock { state in
            guard !state.isStopped else { return }
            state.task = clock.schedule(afterMilliseconds: settings.intervalMilliseconds) { [self] in
                work.async {
                    self.prune()
                    self.schedule()
                }
            }
        }
    }

    /// One pass over the three logs.
    public func prune() {
        let now = clock.nowMilliseconds
        do {
            let attachments = self.attachments
            let pruned = try store.prune(
                keepingAtMost: settings.maxRecords, receivedBefore: now - settings.maxRecordAgeMilliseconds,
                removed: { attachments.removed($0) })
            let count = pruned.expired + pruned.overflow
            if count > 0 { logger.info("pruned notification records", [("count", "\(count)")]) }
            // Events a webhook subscription has not been fed yet stay, whatever their age.
            let floor = try outbox.subscriptions().map(\.cursor).min() ?? .max
            let events = try store.pruneEvents(
                maxEvents: settings.maxEvents, olderThan: now - settings.maxEventAgeMilliseconds, keepingAbove: floor)
            if events > 0 { logger.info("pruned events", [("count", "\(events)")]) }
            try outbox.pruneDeliveries(finishedBefore: now - settings.deliveryRetentionMilliseconds)
        } catch {
            logger.warning("pruning failed", [("error", "\(error)")])
        }
    }
}
