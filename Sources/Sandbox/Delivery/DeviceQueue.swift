// APNs Sandbox — one device's delivery state machine: every push on it, from accepted to a final status.
import APNsProtocol

/// A point in time as the clock gave it: wall ms for records and deadlines, monotonic ns for the timeline.
struct DeliveryInstant: Sendable, Equatable {
    var wall: Int64
    var monotonic: UInt64
}

/// The delivery state machine of one simulated device.
///
/// ### Overview
/// A value type whose `mutating` methods take an event (a push accepted, a save committed, the device
/// going online, a timer falling due, content ready to show) and return ``Action``s for the shell
/// (``DeliveryEngine``) to carry out: save records, present content. It never reads the clock, touches a
/// repository or runs a callback itself, so tests drive it without threads or sleeps.
///
/// ### Lifecycle of one push
/// `accepted` (saved; routed once that save commits) → `deferred` event while a low-priority batch waits →
/// `stored` while the device is offline (one per app: older → `discarded` "coalesced") or while the
/// background budget is used (held: one per app) → `delivering` → `extension-running` → `displayed`, or
/// `delivered-silent` for background and system pushes; `expired` and `discarded` on the way. Every change
/// appends a timeline entry and is saved.
///
/// ### The extension runs at most once
/// A service extension starts only once its push's `extension-running` has committed
/// (``Action/runExtension(_:)``), and never for a push whose committed status is earlier. So after a crash
/// the store tells which pushes may have had their extension run: `extension-running` ones. Recovery shows
/// those with their original content (`original-crash`) instead of running the extension again; `accepted`
/// and `delivering` ones are delivered as usual (their extension had not started).
///
/// ### Saves
/// Records are saved in the order their transitions happened, at most one batch in flight per device: the
/// next batch is handed out only after the previous one committed (``saveCompleted(_:device:at:)`` then
/// ``saveEmitted()``), so the store sees every device's records in order; the shell sends change
/// notifications in commit order. A failed batch is retried after ``Settings/saveRetryMilliseconds``, except
/// the acceptance saves in it: those pushes were never accepted (the provider gets the error) and are
/// dropped.
///
/// ### Timers
/// The machine needs one wake-up at a time, ``nextDeadline``; the shell keeps one clock timer per device
/// at that deadline and calls ``tick(device:at:)``.
struct DeviceQueue {
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    struct Settings: Sendable {
        var lowPriorityDelayMilliseconds: Int64 = 0
        var backgroundPushesPerHour = 3
        var saveRetryMilliseconds: Int64 = 1000
        var extensionWatchdogMilliseconds: Int64 = 120_000
    }

    /// Work for the shell.
    enum Action: Sendable {
        /// Save these records (in order) and report with ``saveCompleted(_:device:at:)``; `events` are the
        /// status changes among them (they go into the same commit).
        case save([NotificationRecord], events: [EventDraft])
        /// Build the content of an alert push and show it (directly or through the extension).
        case present(Presentation)
        /// Start the service extension: the push's `extension-running` has committed.
        case runExtension(ExtensionStart)
    }

    /// An alert push in `delivering`, to be shown.
    struct Presentation: Sendable {
        var sequence: UInt64
        var record: NotificationRecord
        var traits: PushTraits
        /// The device as read for this delivery (nil when the repository does not know it).
        var device: DeviceRecord?
        /// Shown without the service extension whatever the app says now: the push was delivered
        /// before its acceptance committed, on the shell's word that no extension would run.
        var isDirect = false
        /// Its extension was running when the sandbox stopped (a recovered `extension-running` record):
        /// show the original content (`original-crash`); the extension is not run again.
        var wasInterrupted = false
    }

    /// What the shell needs to start a push's extension once its `extension-running` has committed; the
    /// machine only carries it (``extensionRequested(_:_:at:)``).
    struct ExtensionStart: Sendable {
        var sequence: UInt64
        /// The record as committed, status `extension-running` (filled in when the start is handed out).
        var record: NotificationRecord
        /// What the device shows without the extension.
        var original: DisplayedContent
        var device: DeviceRecord?
        var app: AppRecord
    }

    /// What a committed (or failed) save means for the shell.
    struct SaveReport: Sendable {
        /// Records now durable, in save order: announce them (`onChange`).
        var committed: [NotificationRecord] = []
        /// Acceptance completions to call, with their result.
        var completions: [(Completion, Result<Void, any Error>)] = []
    }

    struct PendingSave {
        var record: NotificationRecord
        /// The push this save belongs to.
        var sequence: UInt64
        var completion: Completion?
        /// Set on an acceptance save: the push to route once it commits.
        var acceptedSequence: UInt64?
        /// The event a status change announces (nil for a re-save of the same status), built when the
        /// change happens, on the thread that made it, so handing out a batch costs the store no JSON.
        var event: EventDraft?
        /// The push's `extension-running`: its extension starts once this save commits.
        var startsExtension = false
        /// Its push was forgotten while this save was in flight (``forget(where:budgets:)``): a failed
        /// save of it is not tried again.
        var isForgotten = false
    }

    let settings: Settings
    var isOnline: Bool
    var entries: [UInt64: Entry] = [:]
    /// APNs storage: the one stored push per app (its sequence).
    var storedByApp: [String: UInt64] = [:]
    /// Background pushes the device holds back: one per app.
    var heldByApp: [String: UInt64] = [:]
    /// The open low-priority batch, in acceptance order, and when it is delivered.
    var deferred: [UInt64] = []
    var deferredDue: Int64?
    /// Pushes a fault rule delivers late, and when (wall ms).
    var late: [UInt64: Int64] = [:]
    /// Wall ms of background deliveries per app within the last hour, oldest first.
    var backgroundDeliveries: [String: [Int64]] = [:]
    var pendingSaves: [PendingSave] = []
    var inFlight: [PendingSave]?
    /// Accepted pushes waiting for their acceptance to commit before they are routed (place `committing`).
    /// While there are any, a new push is not delivered at once: it would overtake them.
    var acceptancesAwaitingCommit = 0
    var saveRetryAt: Int64?

    init(settings: Settings, isOnline: Bool) {
        self.settings = settings
        self.isOnline = isOnline
    }

    // MARK: - Events

    /// A push the provider endpoint accepted: `accepted`, saved; routed once that save commits.
    ///
    /// With `deliverAtOnce` (the shell's promise that showing this push runs no service extension) a
    /// push that would go straight to the device (online, not batched, not a background push, not
    /// expired, app installed) is delivered now instead: `delivering` (and `displayed` — in this step with
    /// `directContent`, else once the shell reports the content — or `delivered-silent`) join the acceptance
    /// in the same commit, so the push costs one commit, not three. Nothing of it is visible before that
    /// commit, and if the commit fails the push is dropped with all its saves, as if it had never been
    /// delivered. An alert push delivered so is shown with `directContent` when given (the shell built it
    /// before the step, which saves a second step of the machine), else presented through
    /// ``Action/present(_:)``.
    mutating func accept(
        _ record: NotificationRecord, traits: PushTraits, sequence: UInt64, completion: @escaping Completion,
        deliverAtOnce: Bool = false, directContent: DisplayedContent? = nil, device: DeviceRecord? = nil,
        at now: DeliveryInstant
    ) -> [Action] {
        var record = record
        record.status = .accepted
        record.timeline.append(TimelineEntry(step: NotificationStatus.accepted.rawValue, at: now.wall,
                                             monotonic: now.monotonic))
        entries[sequence] = Entry(record: record, traits: traits, place: .committing)
        pendingSaves.append(PendingSave(
            record: record, sequence: sequence, completion: completion, acceptedSequence: sequence,
            event: NotificationEvents.draft(for: record)))
        guard deliverAtOnce, acceptancesAwaitingCommit == 0, record.deliveryFault == nil,
            goesStraightToDevice(traits, bundleID: record.bundleID, device: device, at: now)
        else {
            acceptancesAwaitingCommit += 1
            return takeSave()
        }
        let actions = deliver(sequence, device: device, at: now, direct: true, directContent: directContent)
        // An alert's `displayed` comes with ``presented(_:outcome:content:notes:detail:at:)``, which
        // hands out the save; a silent push is already final.
        return actions.isEmpty ? takeSave() : actions
    }

    /// The device went online or offline. Online delivers what APNs stored (oldest first) and what the
    /// background budget allows.
    mutating func setOnline(_ online: Bool, device: DeviceRecord?, at now: DeliveryInstant) -> [Action] {
        isOnline = online
        guard online else { return takeSave() }
        var actions: [Action] = []
        let stored = storedByApp.values.sorted()
        storedByApp = [:]
        for sequence in stored {
            actions += route(sequence, device: device, at: now, isFirstAttempt: false)
        }
        actions += releaseHeld(device: device, at: now)
        return actions + takeSave()
    }

    /// The app was removed from the device: its stored, held and batched pushes are discarded.
    mutating func uninstall(bundleID: String, at now: DeliveryInstant) -> [Action] {
        var doomed = [storedByApp[bundleID], heldByApp[bundleID]].compactMap { $0 }
        doomed += deferred.filter { entries[$0]?.record.bundleID == bundleID }
        for sequence in late.keys where entries[sequence]?.record.bundleID == bundleID {
            late[sequence] = nil
            doomed.append(sequence)
        }
        for sequence in doomed.sorted() {
            finish(sequence, .discarded, detail: DeliveryRules.appUninstalled, at: now)
        }
        backgroundDeliveries[bundleID] = nil
        return takeSave()
    }

    /// A timer fell due: retries a failed save, expires stored and held pushes, delivers the low-priority
    /// batch, releases held background pushes, and shows the original content of extensions that never answered.
    mutating func tick(device: DeviceRecord?, at now: DeliveryInstant) -> [Action] {
        if let retry = saveRetryAt, retry <= now.wall { saveRetryAt = nil }
        for sequence in (Array(storedByApp.values) + Array(heldByApp.values)).sorted() {
            if let entry = entries[sequence], let reason = entry.traits.expiryReason(at: now.wall) {
                finish(sequence, .expired, detail: reason, at: now)
            }
        }
        var actions: [Action] = []
        if let due = deferredDue, due <= now.wall {
            let batch = deferred
            deferred = []
            deferredDue = nil
            for sequence in batch {
                actions += route(sequence, device: device, at: now, isFirstAttempt: false)
            }
        }
        actions += releaseHeld(device: device, at: now)
        actions += releaseLate(device: device, at: now)
        let overdue = entries.filter { $0.value.fallback.map { $0.deadline <= now.wall } ?? false }.keys.sorted()
        for sequence in overdue {
            if let fallback = entries[sequence]?.fallback {
                actions += presented(sequence, outcome: .originalTimeout, content: fallback.content,
                                     detail: DeliveryRules.extensionWatchdog, at: now)
            }
        }
        return actions + takeSave()
    }

    /// The shell wants the extension to run for a push in `delivering`: `extension-running`, saved; the
    /// extension is started (``Action/runExtension(_:)``) only once that save has committed, so that a push
    /// whose extension may have run is always `extension-running` in the store. The runner's watchdog
    /// starts now. Ignored when the push is no longer being delivered.
    mutating func extensionRequested(
        _ sequence: UInt64, _ start: ExtensionStart, at now: DeliveryInstant
    ) -> [Action] {
        guard var entry = entries[sequence], entry.place == .presenting, entry.record.status == .delivering else {
            return takeSave()
        }
        entry.fallback = (start.original, now.wall + settings.extensionWatchdogMilliseconds)
        entry.pendingStart = start
        entries[sequence] = entry
        transition(sequence, to: .extensionRunning, at: now)
        if let last = pendingSaves.indices.last, pendingSaves[last].sequence == sequence {
            pendingSaves[last].startsExtension = true
        }
        return takeSave()
    }

    /// The device shows content for a push being delivered: `displayed` with `outcome`. Ignored when the
    /// push is no longer being delivered (a late extension answer after the watchdog).
    mutating func presented(
        _ sequence: UInt64, outcome: DisplayOutcome, content: DisplayedContent, notes: [TimelineEntry] = [],
        detail: String? = nil, at now: DeliveryInstant
    ) -> [Action] {
        guard var entry = entries[sequence], entry.place == .presenting else { return takeSave() }
        entry.record.outcome = outcome
        entry.record.displayed = content
        entry.record.timeline += notes
        entries[sequence] = entry
        finish(sequence, .displayed, detail: detail ?? outcome.rawValue, at: now)
        return takeSave()
    }

    /// Picks up unfinished records after a restart (oldest first): `accepted` ones are routed, `stored`
    /// ones go back to storage (or the device's hold) with their deadline, `delivering` ones are delivered
    /// again (their extension, if any, had not started), and `extension-running` ones, whose extension may
    /// have been running, are shown with their original content (`original-crash`, presented with
    /// ``Presentation/wasInterrupted``), never run again. Each gets a `resumed` timeline entry with
    /// `resumed` as its detail; with `resumed` nil (records restored from a snapshot) none, and stored
    /// ones are taken back as they are, without a save.
    mutating func recover(
        _ records: [(sequence: UInt64, record: NotificationRecord, traits: PushTraits)], device: DeviceRecord?,
        at now: DeliveryInstant, resumed: String? = DeliveryRules.restart
    ) -> [Action] {
        var actions: [Action] = []
        for (sequence, record, traits) in records where !record.status.isFinal {
            guard !entries.values.contains(where: { $0.record.apnsID == record.apnsID }) else { continue }
            var record = record
            if let resumed {
                record.timeline.append(TimelineEntry(step: DeliveryRules.resumedStep, at: now.wall,
                                                     monotonic: now.monotonic, detail: resumed))
            }
            let wasHeld = record.timeline.last(where: { $0.step == NotificationStatus.stored.rawValue })?
                .detail?.hasPrefix("throttled") ?? false
            entries[sequence] = Entry(record: record, traits: traits, place: .committing)
            switch record.status {
            case .accepted:
                actions += route(sequence, device: device, at: now, isFirstAttempt: true)
            case .stored:
                if let reason = traits.expiryReason(at: now.wall) {
                    finish(sequence, .expired, detail: reason, at: now)
                } else if isUninstalled(record.bundleID, device: device, at: now) {
                    finish(sequence, .discarded, detail: DeliveryRules.appUninstalled, at: now)
                } else {
                    if resumed != nil { pendingSaves.append(PendingSave(record: record, sequence: sequence)) }
                    if wasHeld {
                        hold(sequence, at: now, transition: false)
                    } else {
                        store(sequence, at: now, transition: false)
                    }
                }
            case .extensionRunning where traits.kind == .alert:
                entries[sequence]?.place = .presenting
                actions.append(.present(Presentation(
                    sequence: sequence, record: record, traits: traits, device: device, wasInterrupted: true)))
            case .delivering, .extensionRunning:
                actions += deliver(sequence, device: device, at: now)
            case .displayed, .deliveredSilent, .expired, .discarded:
                break
            }
        }
        if isOnline {
            let stored = storedByApp.values.sorted()
            storedByApp = [:]
            for sequence in stored {
                actions += route(sequence, device: device, at: now, isFirstAttempt: false)
            }
            actions += releaseHeld(device: device, at: now)
        }
        return actions + takeSave()
    }

    /// When the machine next needs ``tick(device:at:)``: a save retry, a stored or held push's deadline,
    /// the low-priority batch, the background budget freeing up (while online), an extension watchdog.
    var nextDeadline: Int64? {
        // Asked after every step: no array is built for it.
        var next: Int64?
        func consider(_ deadline: Int64?) {
            guard let deadline else { return }
            if let current = next, current <= deadline { return }
            next = deadline
        }
        consider(saveRetryAt)
        consider(deferredDue)
        for deadline in late.values { consider(deadline) }
        for sequence in storedByApp.values { consider(entries[sequence]?.traits.deadline) }
        for sequence in heldByApp.values { consider(entries[sequence]?.traits.deadline) }
        if isOnline {
            for bundleID in heldByApp.keys {
                consider(budgetFreesUp(bundleID))
            }
        }
        for entry in entries.values {
            consider(entry.fallback?.deadline)
        }
        return next
    }

    /// Whether the machine holds nothing a new one for the device would not at wall time `now`: no push, save,
    /// batch, late delivery, retry or background delivery of the last hour (a budget), and online (as a new
    /// machine starts when the device record says so or there is none). The engine may then let it go
    /// (``DeliveryEngine``'s idle slots).
    func isIdle(at now: Int64) -> Bool {
        isOnline && entries.isEmpty && storedByApp.isEmpty && heldByApp.isEmpty && deferred.isEmpty && deferredDue == nil
            && late.isEmpty && pendingSaves.isEmpty && inFlight == nil && acceptancesAwaitingCommit == 0 && saveRetryAt == nil
            && backgroundDeliveries.values.allSatisfy { times in times.allSatisfy { now - $0 >= DeliveryRules.hourMilliseconds } }
    }
}
