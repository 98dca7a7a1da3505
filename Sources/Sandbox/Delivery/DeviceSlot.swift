// APNs Sandbox — one device's place in the delivery engine: its machine, timer, locks and pending reports.
import Dispatch
import Synchronization
import Support

/// Devices are spread over shards by token so that devices on different threads rarely share a lock.
final class SlotShard: Sendable {
    let slots = Locked<[String: DeviceSlot]>([:])
    /// Bumped (under `slots`' lock) each time a slot of the shard is retired: a slot made from a device record
    /// read before a retirement may be stale and is made again (``DeliveryEngine/slot(for:)``).
    let retirements = Atomic<UInt64>(0)
    /// `slots.count`, written under `slots`' lock: read without it to skip a retirement while the shard
    /// keeps every idle slot (``DeliveryEngine/retireIfIdle(_:device:)``).
    let count = Atomic<Int>(0)
}

/// One device's machine, its timer and its device-record write lock.
final class DeviceSlot: Sendable {
    struct State {
        var queue: DeviceQueue
        var timer: ScheduledTask?
        var timerDeadline: Int64?
        var timerGeneration: UInt64 = 0
        /// Set when the engine let the idle slot go (it is no longer in its shard): a step on it does nothing
        /// and its caller takes the device's new slot (``DeliveryEngine/liveStep(token:_:)``).
        var isRetired = false
    }

    /// Committed batches whose completions and change notifications have not run yet, in commit order.
    ///
    /// A report is queued under the device's `state` lock before the device is freed for its next batch
    /// (so it is always ahead of any later batch's report); whoever finds nobody draining
    /// drains, running the reports in order with no lock held (the emissions lock is only ever taken
    /// inside `state` or alone, never the other way round). A synchronous store that completes the next
    /// batch re-entrantly while the first report is being drained just queues behind it.
    struct Emissions {
        var reports: [DeviceQueue.SaveReport] = []
        var isDraining = false

        /// Queues `report`; true when the caller must drain (nobody else is).
        mutating func enqueue(_ report: DeviceQueue.SaveReport) -> Bool {
            reports.append(report)
            guard !isDraining else { return false }
            isDraining = true
            return true
        }
    }

    /// The device's work in flight: saves not yet completed and callbacks (save completions, timers) queued
    /// but not yet run. Never an extension's run: its answer starts new work when it comes.
    ///
    /// Each piece of work begins before the one that started it ends (a save's completion queues its callback
    /// before the save counts as done), so the count reaches 0 only when everything a change set off has
    /// committed, up to any extension still running (``waitUntilSettled(deadline:commits:)``). A device pushed
    /// without pause may never reach 0: ``commits`` counts its batches, so that a waiter can stop once the batch
    /// with its change has committed.
    struct Settling {
        struct Waiter {
            let semaphore: DispatchSemaphore
            /// Woken when ``Settling/commits`` reaches this, if the count has not reached 0 before.
            let untilCommits: UInt64
        }

        var pending = 0
        /// Batches of the device the store finished (committed or failed).
        var commits: UInt64 = 0
        var waiters: [Waiter] = []

        /// Removes and returns the waiters to wake: all when nothing is in flight, else those whose batch came.
        mutating func takeWoken() -> [DispatchSemaphore] {
            guard !waiters.isEmpty else { return [] }
            let woken = pending == 0 ? waiters : waiters.filter { $0.untilCommits <= commits }
            guard !woken.isEmpty else { return [] }
            waiters.removeAll { waiter in pending == 0 || waiter.untilCommits <= commits }
            return woken.map(\.semaphore)
        }
    }

    let token: String
    let state: Locked<State>
    /// Serialises read-modify-write of the device record; taken before `state`, never inside it.
    let deviceWrites = Locked(())
    let emissions = Locked(Emissions())
    let settling = Locked(Settling())

    init(token: String, queue: DeviceQueue) {
        self.token = token
        self.state = Locked(State(queue: queue))
    }

    /// Runs `body` for every queued report, in order, until none is left (see ``Emissions``).
    func drainEmissions(_ body: (DeviceQueue.SaveReport) -> Void) {
        while let next = emissions.withLock({ emissions -> DeviceQueue.SaveReport? in
            guard !emissions.reports.isEmpty else {
                emissions.isDraining = false
                return nil
            }
            return emissions.reports.removeFirst()
        }) {
            body(next)
        }
    }

    /// A save or callback of the device's starts (see ``Settling``).
    func beginWork() {
        settling.withLock { $0.pending += 1 }
    }

    /// A save or callback of the device's ended, after it began whatever follows it.
    func endWork() {
        let woken = settling.withLock { settling -> [DispatchSemaphore] in
            settling.pending -= 1
            return settling.takeWoken()
        }
        for waiter in woken { waiter.signal() }
    }

    /// A batch of the device's records came back from the store (committed or not). Called in the step that takes
    /// the batch's result, under ``state``'s lock (the settling lock is only ever taken inside it, never around it).
    func batchFinished() {
        let woken = settling.withLock { settling -> [DispatchSemaphore] in
            settling.commits &+= 1
            return settling.takeWoken()
        }
        for waiter in woken { waiter.signal() }
    }

    /// Blocks until the device has no work in flight, or `commits` more of its batches have come back from the store
    /// (a device pushed without pause: its change is in one of the next batches), or `deadline` passes. At once when
    /// nothing is in flight.
    /// - Returns: false when the deadline passed first.
    func waitUntilSettled(deadline: DispatchTime, commits: UInt64) -> Bool {
        guard let waiter = settleWaiter(commits: commits) else { return true }
        return wait(waiter, deadline: deadline)
    }

    /// The first half of ``waitUntilSettled(deadline:commits:)``: a semaphore signalled when the device has no work
    /// in flight or `commits` more of its batches came back (counted from now); nil when nothing is in flight.
    func settleWaiter(commits: UInt64) -> DispatchSemaphore? {
        settling.withLock { settling -> DispatchSemaphore? in
            guard settling.pending > 0 else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            settling.waiters.append(Settling.Waiter(semaphore: semaphore, untilCommits: settling.commits &+ commits))
            return semaphore
        }
    }

    /// The second half: waits for `waiter` until `deadline`; on a timeout it leaves the list (unless a wake-up took
    /// it meanwhile: its signal is then unused).
    func wait(_ waiter: DispatchSemaphore, deadline: DispatchTime) -> Bool {
        if waiter.wait(timeout: deadline) == .success { return true }
        settling.withLock { $0.waiters.removeAll { $0.semaphore === waiter } }
        return false
    }
}
