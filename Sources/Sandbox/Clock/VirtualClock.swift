// APNs Sandbox — a clock a test can freeze, advance, set and resume, for the whole server.
import Support
import Synchronization

/// Time that runs at real speed, possibly shifted, or stands still, and that jumps when told to; every timer
/// follows it (`clock.virtual` in the configuration, `/api/v1/clock`).
///
/// ### Modes
/// - **running**: real speed, `offsetMilliseconds` away from real wall time (0 at start and after
///   ``backToReal()``);
/// - **frozen**: time stands still until it is advanced, set or resumed.
///
/// ``advance(byMilliseconds:)`` and ``set(toMilliseconds:)`` forward run every task that falls due on the way,
/// in deadline order (ties in scheduling order), with ``nowMilliseconds`` reading each task's deadline while
/// it runs (as ``ManualClock`` does); tasks those tasks schedule within the jump run in it too. They run on the
/// clock's serial queue (never on the caller's stack while the caller holds a lock: the call waits for the
/// queue), and the call returns once they ran. Work a task hands to another queue may still be under way then.
/// Setting wall time backwards moves only wall time: monotonic time (``monotonicNanoseconds``, which every
/// timer is kept in) never goes backwards.
///
/// ### Timers
/// Deadlines are kept in the clock's monotonic time, in one ``TimerQueue``. While running, the one dispatch
/// timer (``ClockQueue``) is armed for the real moment at which the clock reaches the earliest one; while
/// frozen, only tasks already due run (a task scheduled with no delay runs at once).
///
/// ### Threading
/// Any thread may read the time and schedule or cancel tasks. The state changes (freeze, advance, set,
/// resume, back to real, reset) run one at a time on the clock's queue; calling one from a task runs it inline.
public final class VirtualClock: SandboxClock {
    public enum Mode: String, Sendable, Equatable {
        case running
        case frozen
    }

    /// What the clock reads and how it moves.
    public struct Reading: Sendable, Equatable {
        /// Wall-clock milliseconds since the Unix epoch.
        public var nowMilliseconds: Int64
        public var monotonicNanoseconds: UInt64
        public var mode: Mode
        /// The clock's wall time minus real wall time.
        public var offsetMilliseconds: Int64
        /// Running at real speed with no offset: it reads what the system clock reads.
        public var isReal: Bool { mode == .running && offsetMilliseconds == 0 }
    }

    /// How the clock's instant relates to real time.
    private enum Base {
        case running(wallOffset: Int64, monotonicOffset: Int64)
        case frozen(wall: Int64, monotonic: Int64)
    }

    private struct State {
        var base: Base
        var timers = TimerQueue<Int64, @Sendable () -> Void>()
        /// The real monotonic deadline the dispatch timer is armed for; nil when idle.
        var armedFor: Int64?

        /// The clock's wall ms and monotonic ns, given the real ones.
        func instant(realWall: Int64, realMonotonic: Int64) -> (wall: Int64, monotonic: Int64) {
            switch base {
            case .running(let wallOffset, let monotonicOffset):
                (realWall + wallOffset, realMonotonic + monotonicOffset)
            case .frozen(let wall, let monotonic):
                (wall, monotonic)
            }
        }

        var instant: (wall: Int64, monotonic: Int64) {
            instant(realWall: WallClock.milliseconds(), realMonotonic: ClockQueue.monotonicNow)
        }

        var reading: Reading { reading(realWall: WallClock.milliseconds(), realMonotonic: ClockQueue.monotonicNow) }

        /// The reading at the given real instant (one read of the real clocks for a change and its reading).
        func reading(realWall: Int64, realMonotonic: Int64) -> Reading {
            let now = instant(realWall: realWall, realMonotonic: realMonotonic)
            let mode: Mode
            switch base {
            case .running: mode = .running
            case .frozen: mode = .frozen
            }
            return Reading(
                nowMilliseconds: now.wall, monotonicNanoseconds: UInt64(max(0, now.monotonic)), mode: mode,
                offsetMilliseconds: now.wall - realWall)
        }

        /// When (real monotonic ns) the dispatch timer must fire for a task due at `deadline`; nil: not while
        /// frozen.
        func realDeadline(for deadline: Int64) -> Int64? {
            switch base {
            case .running(_, let monotonicOffset):
                return deadline - monotonicOffset
            case .frozen(_, let monotonic):
                return deadline <= monotonic ? ClockQueue.monotonicNow : nil
            }
        }

        /// Arms (or idles) the dispatch timer for the earliest task.
        mutating func rearm(_ timer: ClockQueue) {
            armedFor = timers.earliestDeadline().flatMap(realDeadline(for:))
            if let armedFor { timer.arm(at: armedFor) } else { timer.disarm() }
        }
    }

    /// A class so that cancellation handles can hold on to the timers.
    private final class Storage: Sendable {
        let state: Locked<State>
        init(_ state: State) { self.state = Locked(state) }
    }

    private let storage: Storage
    private let timer: ClockQueue
    /// What ``reset()`` returns to.
    private let startingAt: Int64?
    private let startsFrozen: Bool
    /// The most one advance may move the clock (100 years), and the most one jump moves monotonic time.
    public static let maxJumpMilliseconds: Int64 = 100 * 365 * 86_400_000
    /// Jumps take monotonic time this far at most (about 146 years of nanoseconds): a delay added to it
    /// (at most `Int64.max / 4`) cannot overflow. Timers further ahead than that never fire.
    static let monotonicCeiling = Int64.max / 2
    /// 9999-12-31T23:59:59.999Z, the latest instant the API sets the clock to (RFC 3339 has four-digit years).
    public static let latestMilliseconds: Int64 = 253_402_300_799_999

    /// A clock whose tasks run on a serial queue with this label.
    /// - Parameters:
    ///   - startingAt: Its wall time now (ms since the epoch); nil: real time (offset 0).
    ///   - frozen: Whether it starts frozen.
    public init(label: String = "apns-sandbox.clock", startingAt wall: Int64? = nil, frozen: Bool = false) {
        let realWall = WallClock.milliseconds()
        let start = wall ?? realWall
        let base: Base = frozen
            ? .frozen(wall: start, monotonic: ClockQueue.monotonicNow)
            : .running(wallOffset: start - realWall, monotonicOffset: 0)
        storage = Storage(State(base: base))
        startingAt = wall
        startsFrozen = frozen
        timer = ClockQueue(label: label)
        timer.activate { [weak self] in self?.fire() }
    }

    deinit {
        timer.cancel()
    }

    // MARK: SandboxClock

    public var nowMilliseconds: Int64 { storage.state.withLock { $0.instant.wall } }

    public var monotonicNanoseconds: UInt64 { storage.state.withLock { UInt64(max(0, $0.instant.monotonic)) } }

    public var pendingTaskCount: Int { storage.state.withLock { $0.timers.count } }

    @discardableResult
    public func schedule(afterMilliseconds: Int64, _ task: @escaping @Sendable () -> Void) -> ScheduledTask {
        let delay = max(0, min(afterMilliseconds, Int64.max / 4_000_000))
        return insert(task) { $0.instant.monotonic + delay * 1_000_000 }
    }

    @discardableResult
    public func schedule(
        atMonotonicNanoseconds deadline: UInt64, _ task: @escaping @Sendable () -> Void
    ) -> ScheduledTask {
        insert(task) { _ in Int64(clamping: deadline) }
    }

    private func insert(_ task: @escaping @Sendable () -> Void, at deadline: (State) -> Int64) -> ScheduledTask {
        let id = storage.state.withLock { [timer] state in
            let due = deadline(state)
            let id = state.timers.insert(deadline: due, task)
            if let real = state.realDeadline(for: due), state.armedFor.map({ real < $0 }) ?? true {
                state.armedFor = real
                timer.arm(at: real)
            }
            return id
        }
        return ScheduledTask { [storage] in storage.state.withLock { $0.timers.remove(id) } }
    }

    /// On the queue, when the dispatch timer fires: runs what is due, then arms the timer for the next task.
    private func fire() {
        while true {
            let task = storage.state.withLock { [timer] state -> (@Sendable () -> Void)? in
                if let (_, task) = state.timers.popDue(notAfter: state.instant.monotonic) { return task }
                state.rearm(timer)
                return nil
            }
            guard let task else { return }
            task()
        }
    }

    // MARK: Steering

    /// The time now and how the clock moves.
    public var reading: Reading { storage.state.withLock { $0.reading } }

    /// Stops time at the current instant.
    @discardableResult
    public func freeze() -> Reading {
        timer.sync { freezeNow() }
    }

    /// Moves time forward by `milliseconds` (negative counts as 0, at most ``maxJumpMilliseconds``), running
    /// every task that falls due on the way; the mode stays as it was.
    @discardableResult
    public func advance(byMilliseconds milliseconds: Int64) -> Reading {
        timer.sync { jump(by: milliseconds) }
    }

    /// Sets wall time to `milliseconds` since the epoch. Forward, it is an advance (due tasks run); backward,
    /// only wall time moves back (monotonic time and the timers stay). The mode stays as it was.
    @discardableResult
    public func set(toMilliseconds milliseconds: Int64) -> Reading {
        timer.sync { moveWall(to: milliseconds) }
    }

    /// Runs at real speed from the current instant (no-op when running).
    @discardableResult
    public func resume() -> Reading {
        timer.sync { resumeFromNow() }
    }

    /// Back to real time: running with offset 0. Forward (after a freeze), due tasks run on the way.
    @discardableResult
    public func backToReal() -> Reading {
        timer.sync { toRealTime() }
    }

    /// Back to the state it was made in: at its `startingAt` instant (else real time), frozen or running as it
    /// started. A jump forward runs the due tasks; one backward moves wall time only.
    @discardableResult
    public func reset() -> Reading {
        timer.sync {
            // Stand still first: a running clock moves on between moving its wall and freezing it (under load, a
            // millisecond or more past `startingAt`).
            if startsFrozen { _ = freezeNow() }
            if let wall = startingAt { _ = moveWall(to: wall) } else { _ = toRealTime() }
            return startsFrozen ? freezeNow() : resumeFromNow()
        }
    }

    // MARK: On the queue

    private func freezeNow() -> Reading {
        storage.state.withLock { [timer] state in
            let now = state.instant
            state.base = .frozen(wall: now.wall, monotonic: now.monotonic)
            state.rearm(timer)
            return state.reading
        }
    }

    private func toRealTime() -> Reading {
        _ = moveWall(to: WallClock.milliseconds())
        _ = resumeFromNow()
        return storage.state.withLock { [timer] state in
            // A millisecond or two of the move's own time are dropped: the offset is exactly 0.
            if case .running(_, let monotonicOffset) = state.base {
                state.base = .running(wallOffset: 0, monotonicOffset: monotonicOffset)
            }
            state.rearm(timer)
            return state.reading
        }
    }

    private func resumeFromNow() -> Reading {
        storage.state.withLock { [timer] state in
            // One read of the real clocks: the reading returned is the instant resumed at (a second read could
            // be a millisecond later).
            let realWall = WallClock.milliseconds()
            let realMonotonic = ClockQueue.monotonicNow
            if case .frozen(let wall, let monotonic) = state.base {
                state.base = .running(wallOffset: wall - realWall, monotonicOffset: monotonic - realMonotonic)
            }
            state.rearm(timer)
            return state.reading(realWall: realWall, realMonotonic: realMonotonic)
        }
    }

    private func moveWall(to milliseconds: Int64) -> Reading {
        let backwards = storage.state.withLock { [timer] state -> Reading? in
            let delta = milliseconds - state.instant.wall
            guard delta < 0 else { return nil }
            switch state.base {
            case .running(let wallOffset, let monotonicOffset):
                state.base = .running(wallOffset: wallOffset + delta, monotonicOffset: monotonicOffset)
            case .frozen(_, let monotonic):
                state.base = .frozen(wall: milliseconds, monotonic: monotonic)
            }
            state.rearm(timer)
            return state.reading
        }
        return backwards ?? jump(by: milliseconds - nowMilliseconds)
    }

    /// Stands still at the current instant, steps through the due tasks up to `milliseconds` later
    /// (reading each one's deadline while it runs), then carries on in the mode it was in: frozen at the
    /// target, or running with its offsets moved by exactly the jump.
    private func jump(by milliseconds: Int64) -> Reading {
        // Wall time moves by all of it (a set to year 9999 gets there); monotonic time by at most
        // ``maxJumpMilliseconds``, and never past ``monotonicCeiling``, so that no deadline overflows.
        let delta = max(0, min(milliseconds, Self.latestMilliseconds))
        let (start, previous) = storage.state.withLock { state -> ((wall: Int64, monotonic: Int64), Base) in
            let now = state.instant
            let previous = state.base
            state.base = .frozen(wall: now.wall, monotonic: now.monotonic)
            return (now, previous)
        }
        let target = start.monotonic
            + min(min(delta, Self.maxJumpMilliseconds) * 1_000_000, max(0, Self.monotonicCeiling - start.monotonic))
        while let task = storage.state.withLock({ state -> (@Sendable () -> Void)? in
            guard let (deadline, task) = state.timers.popDue(notAfter: target) else { return nil }
            if case .frozen(_, let monotonic) = state.base, deadline > monotonic {
                state.base = .frozen(wall: start.wall + (deadline - start.monotonic) / 1_000_000, monotonic: deadline)
            }
            return task
        }) {
            task()
        }
        return storage.state.withLock { [timer] state in
            var reached = (wall: start.wall + delta, monotonic: target)
            // A task that advanced the clock itself took it further: never back.
            if case .frozen(let wall, let monotonic) = state.base, monotonic > target { reached = (wall, monotonic) }
            switch previous {
            case .running(let wallOffset, let monotonicOffset):
                state.base = .running(
                    wallOffset: wallOffset + (reached.wall - start.wall),
                    monotonicOffset: monotonicOffset + (reached.monotonic - start.monotonic))
            case .frozen:
                state.base = .frozen(wall: reached.wall, monotonic: reached.monotonic)
            }
            state.rearm(timer)
            return state.reading
        }
    }
}
