// APNs Sandbox — the store of `storage.mode` `memory`: a bounded journal of notifications and events, devices and
// apps, all in memory (the load-test mode: nothing on disk, everything lost on restart).
import Support
import Dispatch
import Sandbox
import Synchronization

/// Notifications, events, devices and apps kept in memory, behind the same repository protocols as
/// ``SQLiteStore`` (``SandboxStore``), for load tests: no file, no fsync, no encoding.
///
/// ### The journal
/// At most ``Capacity/notifications`` notification records and ``Capacity/events`` events are kept. A save
/// that goes past either bound drops the oldest (by when each was first saved, whatever its status) and
/// counts it (``droppedNotifications``, ``droppedEvents``): the API, SSE catch-up and webhooks see what is
/// kept. A notification dropped while it was still on its way is kept again, as new, when its next state is
/// saved. Devices and apps are not bounded (the configuration's and those the pushes registered).
///
/// ### Threads
/// Reads and writes of the journal take one lock, of devices and apps another, each for the time they touch
/// their state (no I/O under either; records a save drops are freed after the lock). A save is
/// visible to reads when ``save(_:events:completion:)`` returns; its completion, and then the event
/// observer with the events of every save finished since, run on the store's own serial queue, in save
/// order — as ``SQLiteStore`` runs them on its writer after the commit. Synchronous writes (devices, apps,
/// deletes, resets) run their `committed` callbacks on that queue too, in the same order (after every save
/// before them, before every save after them), and return once it ran.
public final class MemoryStore: Sendable {
    /// How much of the journal is kept.
    public struct Capacity: Sendable, Equatable {
        public var notifications: Int
        public var events: Int

        public init(notifications: Int, events: Int) {
            self.notifications = max(1, notifications)
            self.events = max(1, events)
        }
    }

    public let capacity: Capacity
    /// The journal and the callbacks waiting to run.
    let state: Locked<MemoryState>
    /// Devices and apps: the pushes' lookups never wait for the journal.
    let directory = Locked<MemoryDirectory>(MemoryDirectory())
    /// 0 until ``open()``, 1 open, 2 after ``close()``.
    private let lifecycle = Atomic<Int>(0)
    /// Orders synchronous writes and their `committed` callbacks (which may read the store).
    let writes = Locked<Void>(())
    /// Runs completions and the event observer, in save order.
    let callbacks = DispatchQueue(label: "apns-sandbox.memory-store")
    let onCallbackQueue = DispatchSpecificKey<Bool>()
    let eventObserver = ObserverSlot<[SandboxEvent]>()
    private let commitObserver = ObserverSlot<Double>()
    private let dropObserver = ObserverSlot<[NotificationKey]>()

    public init(capacity: Capacity) {
        self.capacity = capacity
        state = Locked(MemoryState())
        callbacks.setSpecific(key: onCallbackQueue, value: true)
    }

    // MARK: Lifecycle

    /// Makes the store usable; until then (and after ``close()``) reads and writes fail with `closed`.
    public func open() throws {
        let (exchanged, found) = lifecycle.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing)
        guard exchanged || found == 1 else { throw StoreError.closed() }
    }

    /// Refuses new work; the callbacks already queued still run. Everything kept is gone with the object.
    public func close() {
        lifecycle.store(2, ordering: .releasing)
    }

    public var isClosed: Bool { lifecycle.load(ordering: .acquiring) == 2 }

    /// Throws `closed` before ``open()`` and after ``close()``.
    func checkOpen() throws {
        switch lifecycle.load(ordering: .acquiring) {
        case 1: return
        case 2: throw StoreError.closed()
        default: throw StoreError.notOpen()
        }
    }

    /// Always healthy: nothing in memory can fail the way a file does.
    public var health: StoreHealth { .healthy }

    /// Accepted for symmetry with ``SQLiteStore``; never called (the health never changes).
    public func observeHealth(_ observer: (@Sendable (StoreHealth) -> Void)?) {}

    /// Accepted for symmetry with ``SQLiteStore``; never called: there are no commits.
    public func observeCommits(_ observer: (@Sendable (Double) -> Void)?) {
        commitObserver.set(observer)
    }

    /// Calls `observer` after saves and appends that logged events, with those events in id order, on the
    /// store's queue (it must be quick and must not write to the store synchronously). Replaces any
    /// earlier observer; nil removes it.
    public func observeEvents(_ observer: (@Sendable ([SandboxEvent]) -> Void)?) {
        eventObserver.set(observer)
    }

    /// Calls `observer` with the notifications the bound dropped that may have attachment files (theirs to
    /// remove; not those shown without an extension and attachments, ``NotificationJournal/mayHaveFiles(_:)``,
    /// unless they replaced a push that may have), on the thread of the save that dropped them; it must be
    /// quick. Nil removes it.
    public func observeDrops(_ observer: (@Sendable ([NotificationKey]) -> Void)?) {
        dropObserver.set(observer)
    }

    func announceDropped(_ keys: [NotificationKey]) {
        guard !keys.isEmpty else { return }
        dropObserver(keys)
    }

    // MARK: The journal's counts

    /// What the journal holds and has dropped.
    public struct JournalCounts: Sendable, Equatable {
        public var notifications: Int
        public var events: Int
        public var droppedNotifications: Int
        public var droppedEvents: Int
    }

    public var journal: JournalCounts {
        state.withLock {
            JournalCounts(
                notifications: $0.notifications.count, events: $0.events.count,
                droppedNotifications: $0.notifications.dropped, droppedEvents: $0.events.dropped)
        }
    }

    /// Notification records dropped to keep the bound.
    public var droppedNotifications: Int { state.withLock { $0.notifications.dropped } }
    /// Events dropped to keep the bound.
    public var droppedEvents: Int { state.withLock { $0.events.dropped } }

    // MARK: Plumbing

    /// Runs `body` on the journal; throws `closed` before ``open()`` and after ``close()``.
    func withOpenState<Value>(_ body: (inout MemoryState) throws -> Value) throws -> Value {
        try checkOpen()
        return try state.withLock { state in try body(&state) }
    }

    /// Runs `body` on the devices and apps; throws `closed` before ``open()`` and after ``close()``.
    func withOpenDirectory<Value>(_ body: (inout MemoryDirectory) throws -> Value) throws -> Value {
        try checkOpen()
        return try directory.withLock { directory in try body(&directory) }
    }

    /// Queues `callback` (and `events` for the observer, after it) behind every callback queued before.
    /// Call it while holding ``state`` (`state` is that lock's value) so that the queue's order is the
    /// order of the writes.
    func enqueueCallback(
        in state: inout MemoryState, events: [SandboxEvent], finish: (@Sendable () -> Void)? = nil,
        _ callback: @escaping @Sendable () -> Void
    ) -> Bool {
        state.pending.append(MemoryState.Callback(run: callback, events: events, finish: finish))
        guard !state.isDrainScheduled else { return false }
        state.isDrainScheduled = true
        return true
    }

    /// Starts a drain of the queued callbacks when ``enqueueCallback(in:events:_:)`` said so.
    func scheduleDrain(_ needed: Bool) {
        guard needed else { return }
        callbacks.async { [self] in drain() }
    }

    private func drain() {
        let batch = state.withLock { state in
            state.isDrainScheduled = false
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
        }
        for callback in batch {
            callback.run()
        }
        let events = batch.flatMap(\.events)
        if !events.isEmpty {
            eventObserver(events)
        }
        for callback in batch {
            callback.finish?()
        }
    }

    /// A synchronous write: `body` on the journal and the directory (the journal's lock taken first, both
    /// held), then — in the store's callback order, after the completions of every save before it and before
    /// any after it, as the SQLite writer runs them — `committed` with its result and the observer with
    /// `events(result)` (events `body` logged). Returns once both ran. Writes are ordered among
    /// themselves by ``writes``, held only while `body` runs and its callback is queued.
    ///
    /// Called from a completion or the observer (the store's own queue, which cannot wait for itself), it
    /// queues the same callback and returns without waiting for it.
    func write<Value: Sendable>(
        _ body: (inout MemoryState, inout MemoryDirectory) throws -> Value,
        committed: @escaping @Sendable (Value) -> Void = { _ in },
        events: (Value) -> [SandboxEvent] = { _ in [] }
    ) throws -> Value {
        let done = DispatchSemaphore(value: 0)
        let (value, drain) = try writes.withLock { _ in
            try withOpenState { state in
                let value = try directory.withLock { directory in try body(&state, &directory) }
                let drain = enqueueCallback(in: &state, events: events(value), finish: { done.signal() }) {
                    committed(value)
                }
                return (value, drain)
            }
        }
        scheduleDrain(drain)
        if DispatchQueue.getSpecific(key: onCallbackQueue) == nil { done.wait() }
        return value
    }

    /// ``write(_:committed:events:)`` of the journal alone.
    func writeJournal<Value: Sendable>(_ body: (inout MemoryState) throws -> Value) throws -> Value {
        try write { state, _ in try body(&state) }
    }

    /// ``write(_:committed:events:)`` of devices and apps alone.
    func writeDirectory<Value: Sendable>(
        _ body: (inout MemoryDirectory) throws -> Value, committed: @escaping @Sendable (Value) -> Void = { _ in }
    ) throws -> Value {
        try write({ _, directory in try body(&directory) }, committed: committed)
    }
}

/// Devices and apps, behind their own lock.
struct MemoryDirectory: Sendable {
    var devices = MemoryDeviceTable()
    var apps: [String: AppRecord] = [:]
}

/// The journal and the callbacks waiting to run, behind ``MemoryStore``'s main lock.
struct MemoryState: Sendable {
    var notifications = NotificationJournal()
    var events = EventJournal()

    struct Callback: Sendable {
        let run: @Sendable () -> Void
        let events: [SandboxEvent]
        /// Runs after the observer heard of the batch's events (a synchronous write's waiter).
        var finish: (@Sendable () -> Void)?
    }

    var pending: [Callback] = []
    var isDrainScheduled = false
}
