// APNs Sandbox — the shell around every device's delivery state machine: locks, saves, timers, callbacks.
import Dispatch
import Synchronization

/// Delivers accepted pushes to simulated devices (architecture.md, "Notification lifecycle").
///
/// ### Overview
/// Each device has a ``DeviceQueue`` state machine. The engine feeds it events (a push accepted, a save
/// committed, the device going online, a timer) and carries out the actions it returns: saving records
/// through the ``NotificationRepository``, building displayed content, running the service extension.
/// Observers learn about every committed change through `onChange`, in order per device.
///
/// ### Threading
/// Safe from any thread. Each device's machine sits behind its own lock (`Locked`), held only while the machine
/// steps (pure computation and timer bookkeeping); repositories, callbacks and the extension are always
/// called with no lock held. Device record writes (``setOnline(_:token:)``, ``uninstall(bundleID:token:)``)
/// are serialised per device by a second lock. Past ``Configuration/idleSlotsKeptPerShard`` slots in its shard,
/// a device whose machine is idle (nothing queued, saving or timed, online as its record says) gives its slot
/// up after its last save: a million devices pushed once each keep a bounded number of machines
/// (DeliveryEngine+Slots.swift). Save completions and timers are handed to a dispatch
/// queue (unless ``Configuration/runsCallbacksInline``) because they may arrive on the store's own
/// thread, where a synchronous repository read would wait for itself.
///
/// ### Durability
/// A push is acknowledged (`accept`'s completion) only after its `accepted` record committed, and only
/// then delivered. Every transition is saved; after a restart ``recover()`` resumes every record whose
/// status is not final, so every accepted push reaches a final status. A service extension starts only
/// after its push's `extension-running` committed, so recovery knows which ones may have run: those are
/// finalised with their original content, never run a second time.
public final class DeliveryEngine: Sendable {
    public struct Configuration: Sendable {
        /// Priority 5 and 1 pushes to an online device are delivered in batches: the first one opens a batch
        /// that is delivered this long after (0 = at once, like priority 10).
        public var lowPriorityDelayMilliseconds: Int64 = 0
        /// Background pushes delivered per app per device in any sliding hour; more are held (0 = no limit).
        public var backgroundPushesPerHour: Int = 3
        /// How long APNs stores a push for an offline device, from receipt (capped by `apns-expiration`).
        public var maxStorageMilliseconds: Int64 = 30 * 24 * 3_600_000
        /// How long after a failed save it is tried again.
        public var saveRetryMilliseconds: Int64 = 1000
        /// How long the engine waits for the ``ServiceExtensionRunner`` before showing the original content
        /// (`original-timeout`); longer than any extension budget plus grace.
        public var extensionWatchdogMilliseconds: Int64 = 120_000
        /// Runs save completions and timer callbacks on the thread that delivers them instead of a dispatch
        /// queue. Only for tests whose repositories complete synchronously and whose clock is a `ManualClock`.
        public var runsCallbacksInline = false
        /// Idle device slots each of the 16 shards keeps before it lets idle ones go: a device pushed again soon
        /// reuses its slot instead of making a new one per push (an idle one about 0.6 KB: 16,384 of them by default).
        public var idleSlotsKeptPerShard = 1024
        /// The longest ``waitUntilSettled(token:)`` and ``waitUntilAllSettled()`` wait, in real time.
        public var settleTimeoutMilliseconds: Int64 = 10_000

        public init() {}
    }

    public let configuration: Configuration
    let clock: any SandboxClock
    let notifications: any NotificationRepository
    let devices: any DeviceRepository
    let extensionRunner: (any ServiceExtensionRunner)?
    let onChange: @Sendable (NotificationRecord) -> Void
    let shards: [SlotShard] = (0..<16).map { _ in SlotShard() }
    private let sequence = Atomic<UInt64>(0)
    /// Set by ``stop()``: no device timer is armed again.
    private let isStopped = Atomic<Bool>(false)

    /// - Parameters:
    ///   - configuration: Delivery rules.
    ///   - clock: Time and timers.
    ///   - notifications: Where records are saved.
    ///   - devices: Devices (online state, locale, installed apps) and apps (strings, extension).
    ///   - serviceExtensionRunner: Runs extensions; nil shows every alert directly (outcome `direct`).
    ///   - onChange: Called after each committed change of a record, in order per device, with no lock held.
    public init(
        configuration: Configuration = Configuration(), clock: any SandboxClock,
        notifications: any NotificationRepository, devices: any DeviceRepository,
        serviceExtensionRunner: (any ServiceExtensionRunner)? = nil,
        onChange: @escaping @Sendable (NotificationRecord) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.clock = clock
        self.notifications = notifications
        self.devices = devices
        self.extensionRunner = serviceExtensionRunner
        self.onChange = onChange
    }

    // MARK: - Public API

    /// A push the provider endpoint accepted: status `accepted` plus a timeline entry, saved durably;
    /// `completion` runs after the commit (the provider answers 200 only then) or with the save's error
    /// (the push is then dropped). Delivery then proceeds on its own.
    ///
    /// A push that goes straight to an online device and runs no service extension is delivered before
    /// that commit and committed with it (see ``DeviceQueue/accept(_:traits:sequence:completion:deliverAtOnce:directContent:device:at:)``):
    /// observers still see `accepted` first, and nothing before the commit.
    public func accept(
        _ record: NotificationRecord, completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        let traits = PushTraits(record: record, maxStorageMilliseconds: configuration.maxStorageMilliseconds)
        let number = nextSequence()
        let device = try? devices.device(token: record.deviceToken)
        let deliverAtOnce = !runsExtension(record, traits: traits)
        let directContent = deliverAtOnce && mayShowAtOnce(record, traits: traits, device: device)
            ? originalContent(of: record, traits: traits, device: device, app: try? devices.app(bundleID: record.bundleID))
            : nil
        liveStep(token: record.deviceToken) { queue, now in
            queue.accept(record, traits: traits, sequence: number, completion: completion,
                         deliverAtOnce: deliverAtOnce, directContent: directContent, device: device, at: now)
        }
    }

    /// Sets the device online or offline and saves the device record; coming online delivers what was stored.
    ///
    /// A device the repository does not know changes only in memory.
    /// - Throws: The device repository's error; the in-memory state is then unchanged.
    public func setOnline(_ online: Bool, token: String) throws {
        let (slot, actions) = try liveDeviceWrite(token: token) { slot in
            var device = try devices.device(token: token)
            if var updated = device, updated.isOnline != online {
                updated.isOnline = online
                try devices.saveDevice(updated)
                device = updated
            }
            return step(slot) { queue, now in queue.setOnline(online, device: device, at: now) }
        }
        perform(actions, on: slot)
        retireIfIdle(slot, device: try? devices.device(token: token))
    }

    /// Blocks until what the device's changes so far set off has committed: the saves of its pushes and what
    /// their commits and its fired timers led to, up to a service extension still running (its answer is
    /// committed when it comes). At once for a device with nothing in flight. A device pushed without pause may
    /// never be idle: then it returns once three more of its batches came back from the store (the change's first
    /// records are in one of them; what follows from them, such as `displayed` after `delivering`, may still be on
    /// its way). At most ``Configuration/settleTimeoutMilliseconds`` of real time (a store that does not commit).
    /// Never call it on an event loop thread: it waits for the store.
    /// - Returns: false when the time ran out first (a device pushed to without pause may never settle).
    @discardableResult
    public func waitUntilSettled(token: String) -> Bool {
        guard let slot = shard(for: token).slots.withLock({ $0[token] }) else { return true }
        return slot.waitUntilSettled(deadline: settleDeadline(), commits: Self.settleCommits)
    }

    /// How many of a busy device's batches a wait lets come back from the store before it returns anyway: a change's
    /// records join the batch after the one in flight, or (a timer's callback still queued) the one after that.
    static let settleCommits: UInt64 = 3

    /// ``waitUntilSettled(token:)`` for every device with work in flight now (after a clock change, the
    /// devices whose timers fell due), within one ``Configuration/settleTimeoutMilliseconds`` for all. Every
    /// device's batches are counted from the call, so that many busy devices cost the time of a few batches, not
    /// a few batches each.
    @discardableResult
    public func waitUntilAllSettled() -> Bool {
        let slots = shards.flatMap { shard in shard.slots.withLock { Array($0.values) } }
        let waiters = slots.compactMap { slot in slot.settleWaiter(commits: Self.settleCommits).map { (slot, $0) } }
        let deadline = settleDeadline()
        var settled = true
        for (slot, waiter) in waiters where !slot.wait(waiter, deadline: deadline) { settled = false }
        return settled
    }

    private func settleDeadline() -> DispatchTime {
        .now() + .milliseconds(Int(clamping: configuration.settleTimeoutMilliseconds))
    }

    /// Removes the app from the device: marks it uninstalled in the device record (if not already) and
    /// discards its stored, held and batched pushes.
    /// - Throws: The device repository's error; nothing is discarded then.
    public func uninstall(bundleID: String, token: String) throws {
        let (slot, actions) = try liveDeviceWrite(token: token) { slot in
            if var device = try devices.device(token: token),
                let index = device.apps.firstIndex(where: { $0.bundleID == bundleID }),
                device.apps[index].uninstalledAt == nil
            {
                device.apps[index].uninstalledAt = clock.nowMilliseconds
                try devices.saveDevice(device)
            }
            return step(slot) { queue, now in queue.uninstall(bundleID: bundleID, at: now) }
        }
        perform(actions, on: slot)
        retireIfIdle(slot, device: try? devices.device(token: token))
    }

    /// What the device's user sees now, from the committed records (see ``NotificationCenterView``): at most
    /// `limit` notifications, the newest, when given.
    public func notificationCenter(token: String, limit: Int? = nil) throws -> NotificationCenterView {
        let device = try devices.device(token: token)
        var filter = NotificationFilter(deviceToken: token)
        filter.statuses = NotificationCenterView.statuses
        let records = try notifications.notifications(matching: filter, limit: Int.max, offset: 0)
        return NotificationCenterView(records: records, device: device, limit: limit)
    }

    /// After a restart: every record whose status is not final resumes. Stored ones are re-queued with
    /// their deadline; accepted and delivering ones are delivered again. Extension-running ones are shown
    /// with their original content (`original-crash`, the timeline says the sandbox restarted): their
    /// extension may have run already and is never run twice (an extension starts only once its push's
    /// `extension-running` has committed).
    /// Call once, before the provider endpoint accepts pushes, and after the extension runner has killed
    /// what the previous run's extensions left.
    public func recover() throws {
        resume(try notifications.unfinished(), resumed: DeliveryRules.restart)
    }

    /// Resumes `records` (not final, oldest first) as ``recover()`` does, each with a `resumed` timeline
    /// entry whose detail is `resumed` (none when nil).
    func resume(_ records: [NotificationRecord], resumed: String?) {
        var order: [String] = []
        var byDevice: [String: [(sequence: UInt64, record: NotificationRecord, traits: PushTraits)]] = [:]
        for record in records {
            if byDevice[record.deviceToken] == nil { order.append(record.deviceToken) }
            let traits = PushTraits(record: record, maxStorageMilliseconds: configuration.maxStorageMilliseconds)
            byDevice[record.deviceToken, default: []].append((nextSequence(), record, traits))
        }
        for token in order {
            let device = try? devices.device(token: token)
            let pushes = byDevice[token] ?? []
            liveStep(token: token) { queue, now in queue.recover(pushes, device: device, at: now, resumed: resumed) }
        }
    }

    /// Cancels every device's timer (expiry, storage limit, low-priority batch, save retry) and arms none
    /// from now on: a server that stopped, or failed to start after ``recover()``, leaves nothing on the
    /// clock. Records stay as they are; the next start's ``recover()`` picks them up.
    public func stop() {
        isStopped.store(true, ordering: .relaxed)
        for shard in shards {
            for slot in shard.slots.withLock({ Array($0.values) }) {
                slot.state.withLock { state in
                    state.timer?.cancel()
                    state.timer = nil
                    state.timerDeadline = nil
                }
            }
        }
    }

    // MARK: - Device slots

    private func nextSequence() -> UInt64 {
        sequence.add(1, ordering: .relaxed).newValue
    }

    /// The slot of `token`, created on first use with the device's stored online state (online when unknown).
    func slot(for token: String) -> DeviceSlot {
        let shard = shard(for: token)
        while true {
            let retirements = shard.retirements.load(ordering: .acquiring)
            if let slot = shard.slots.withLock({ $0[token] }) { return slot }
            // Read outside the lock; if another thread created the slot meanwhile, theirs wins. A slot retired
            // meanwhile may have seen the device go online after this read: then read again.
            let isOnline = (try? devices.device(token: token))??.isOnline ?? true
            let settings = DeviceQueue.Settings(
                lowPriorityDelayMilliseconds: configuration.lowPriorityDelayMilliseconds,
                backgroundPushesPerHour: configuration.backgroundPushesPerHour,
                saveRetryMilliseconds: configuration.saveRetryMilliseconds,
                extensionWatchdogMilliseconds: configuration.extensionWatchdogMilliseconds)
            let created = DeviceSlot(token: token, queue: DeviceQueue(settings: settings, isOnline: isOnline))
            let slot = shard.slots.withLock { slots -> DeviceSlot? in
                if let existing = slots[token] { return existing }
                guard shard.retirements.load(ordering: .acquiring) == retirements else { return nil }
                slots[token] = created
                shard.count.store(slots.count, ordering: .relaxed)
                return created
            }
            if let slot { return slot }
        }
    }

    private func now() -> DeliveryInstant {
        DeliveryInstant(wall: clock.nowMilliseconds, monotonic: clock.monotonicNanoseconds)
    }

    /// Runs one step of the device's machine under its lock, then moves the device's timer to the
    /// machine's next deadline.
    func step(
        _ slot: DeviceSlot, timerGeneration: UInt64? = nil,
        _ body: (inout DeviceQueue, DeliveryInstant) -> [DeviceQueue.Action]
    ) -> [DeviceQueue.Action] {
        stepIfLive(slot, timerGeneration: timerGeneration, body) ?? []
    }

    /// ``step(_:timerGeneration:_:)``, or nil without running `body` when the slot was retired (its device has
    /// a new slot, or will have one at its next lookup).
    func stepIfLive(
        _ slot: DeviceSlot, timerGeneration: UInt64? = nil,
        _ body: (inout DeviceQueue, DeliveryInstant) -> [DeviceQueue.Action]
    ) -> [DeviceQueue.Action]? {
        slot.state.withLock { state in
            guard !state.isRetired else { return nil }
            let now = now()
            if let timerGeneration, timerGeneration == state.timerGeneration {
                state.timer = nil
                state.timerDeadline = nil
            }
            let actions = body(&state.queue, now)
            rescheduleTimer(&state, slot: slot, now: now)
            return actions
        }
    }

    /// Keeps exactly one clock timer per device, at the machine's next deadline.
    private func rescheduleTimer(_ state: inout DeviceSlot.State, slot: DeviceSlot, now: DeliveryInstant) {
        let next = isStopped.load(ordering: .relaxed) ? nil : state.queue.nextDeadline
        guard next != state.timerDeadline else { return }
        state.timer?.cancel()
        state.timer = nil
        state.timerDeadline = next
        guard let next else { return }
        state.timerGeneration &+= 1
        let generation = state.timerGeneration
        state.timer = clock.schedule(afterMilliseconds: max(0, next - now.wall)) { [self] in
            hop(on: slot) { self.timerFired(slot, generation: generation) }
        }
    }

    /// Runs a save's completion or a timer's callback for the device, counted as its work in flight
    /// (``DeviceSlot/Settling``) from now until it has run.
    func hop(on slot: DeviceSlot, _ work: @escaping @Sendable () -> Void) {
        slot.beginWork()
        if configuration.runsCallbacksInline {
            work()
            slot.endWork()
        } else {
            DispatchQueue.global().async {
                work()
                slot.endWork()
            }
        }
    }

    // MARK: - Events from saves, timers and the extension

    private func timerFired(_ slot: DeviceSlot, generation: UInt64) {
        let device = try? devices.device(token: slot.token)
        let actions = step(slot, timerGeneration: generation) { queue, now in queue.tick(device: device, at: now) }
        perform(actions, on: slot)
    }

    /// A batch of the device committed (or failed). The next batch goes to the store at once, before
    /// this one's completions and change notifications run, so the store's writer does not wait for
    /// them; the notifications still go out in commit order (``DeviceSlot/Emissions``).
    func saveCompleted(_ slot: DeviceSlot, result: Result<Void, any Error>) {
        let device = try? devices.device(token: slot.token)
        var drains = false
        var emitted = false
        let actions = step(slot) { queue, now in
            // Counted under the device's lock, where its batches finish in the order they were handed out.
            slot.batchFinished()
            let (report, actions) = queue.saveCompleted(result, device: device, at: now)
            // Queued before the device is free for its next batch, so no later batch (handed out
            // below or by another thread right after) can report before this one.
            drains = slot.emissions.withLock { $0.enqueue(report) }
            guard actions.isEmpty else { return actions }
            // Nothing to present first: the next batch goes out in the same step.
            emitted = true
            return queue.saveEmitted()
        }
        // Routed acceptances are presented first, so that their `displayed` joins the next batch ahead
        // of anything accepted later (display order is acceptance order).
        perform(actions, on: slot)
        if !emitted { perform(step(slot) { queue, _ in queue.saveEmitted() }, on: slot) }
        if drains {
            slot.drainEmissions { report in
                for (completion, outcome) in report.completions { completion(outcome) }
                for record in report.committed { onChange(record) }
            }
        }
        retireIfIdle(slot, device: device)
    }
}
