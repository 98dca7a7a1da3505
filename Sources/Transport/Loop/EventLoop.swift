// APNs Sandbox — one epoll event loop on one thread.
import CLinuxSystem
import Foundation
import Glibc
import Support
import Synchronization

/// Something registered with an event loop that wants readiness events.
public protocol Selectable: AnyObject {
    /// Called on the loop thread with the epoll event bits.
    /// - Parameters:
    ///   - readable: `EPOLLIN`.
    ///   - writable: `EPOLLOUT`.
    ///   - hangup: `EPOLLHUP` or `EPOLLERR`: the connection is gone (reset, or closed both ways).
    ///   - peerShutdown: `EPOLLRDHUP`: the peer shut down its sending side (FIN); only reported with
    ///     ``Interest/peerShutdown``.
    func handleEvents(readable: Bool, writable: Bool, hangup: Bool, peerShutdown: Bool)
}

/// What a registration wants to hear about.
public struct Interest: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let read = Interest(rawValue: 1)
    public static let write = Interest(rawValue: 2)
    /// The peer's FIN (`EPOLLRDHUP`), also while not reading. Level-triggered like the others: a handler
    /// that has seen it and keeps the registration must drop this interest, or the loop spins on it.
    public static let peerShutdown = Interest(rawValue: 4)

    var epollBits: UInt32 {
        var bits: UInt32 = 0
        if contains(.peerShutdown) { bits |= CLinuxSystem_EPOLLRDHUP }
        if contains(.read) { bits |= CLinuxSystem_EPOLLIN }
        if contains(.write) { bits |= CLinuxSystem_EPOLLOUT }
        return bits
    }
}

/// A single-threaded epoll loop.
///
/// ### Threading
/// All I/O objects registered here (sockets, connections) are confined to the loop's thread.
/// Other threads reach the loop only through `execute(_:)`, which queues the closure under a
/// lock and wakes the loop with an eventfd. Timers (`schedule(afterNanoseconds:_:)`) live in a
/// ``TimerQueue`` on the loop thread, in ``MonotonicClock`` nanoseconds, and arm one timerfd for the
/// earliest deadline.
///
/// Safety of `@unchecked Sendable`: the mutable state touched off-loop is `pendingTasks` and
/// `wakeupPending`, both inside `Locked`s; everything else is read and written only on the loop
/// thread (checked with `preconditionInEventLoop()` on the entry points).
public final class EventLoop: @unchecked Sendable, CustomStringConvertible {
    public let index: Int
    private let epollFD: Int32
    private let wakeFD: Int32
    private let timerFD: Int32
    private let pendingTasks = Locked<[@Sendable () -> Void]>([])
    private let wakeupPending = Atomic<Bool>(false)
    private let threadID = Locked<pthread_t?>(nil)
    private let finished = Locked<Bool>(false)
    private let finishedCondition = NSCondition()

    // Loop-thread state.
    private var registrations: [UInt64: any Selectable] = [:]
    private var generation: UInt64 = 0
    private var timers = TimerQueue<UInt64, () -> Void>()
    private var armedDeadline: UInt64 = 0
    private var isStopping = false
    /// A scratch buffer for socket reads, shared by every connection on this loop.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Where TLS connections on this loop decrypt into.
    let plaintextBuffer: UnsafeMutableRawBufferPointer

    private static let wakeToken: UInt64 = .max
    private static let timerToken: UInt64 = .max - 1

    public var description: String { "EventLoop(\(index))" }

    /// Creates the loop and its thread.
    public init(index: Int, readBufferSize: Int = 64 * 1024) throws {
        self.index = index
        self.epollFD = try syscallChecked("epoll_create1") { CLinuxSystem_epoll_create() }
        self.wakeFD = try syscallChecked("eventfd") { CLinuxSystem_eventfd() }
        self.timerFD = try syscallChecked("timerfd_create") { CLinuxSystem_timerfd_create() }
        self.readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBufferSize, alignment: 16)
        self.plaintextBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBufferSize, alignment: 16)
        try syscallChecked("epoll_ctl") {
            CLinuxSystem_epoll_ctl(epollFD, CLinuxSystem_EPOLL_CTL_ADD, wakeFD, CLinuxSystem_EPOLLIN, Self.wakeToken)
        }
        try syscallChecked("epoll_ctl") {
            CLinuxSystem_epoll_ctl(epollFD, CLinuxSystem_EPOLL_CTL_ADD, timerFD, CLinuxSystem_EPOLLIN, Self.timerToken)
        }
        let thread = Thread { [self] in
            self.threadID.withLock { $0 = pthread_self() }
            // The kernel's name (/proc, `top -H`): Foundation's `Thread.name` does not reach it on Linux.
            CurrentThread.setName("sandbox-loop-\(index)")
            self.run()
        }
        thread.name = "apns-sandbox-loop-\(index)"
        thread.stackSize = 8 << 20
        thread.start()
        // Wait until the thread has recorded its id so `inEventLoop` is exact from now on.
        while threadID.withLock({ $0 == nil }) { sched_yield() }
    }

    deinit {
        readBuffer.deallocate()
        plaintextBuffer.deallocate()
    }

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        guard let id = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "not on \(self)", file: file, line: line)
    }

    /// Runs `task` on the loop thread soon (never inline).
    public func execute(_ task: @escaping @Sendable () -> Void) {
        pendingTasks.withLock { $0.append(task) }
        if !wakeupPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = CLinuxSystem_eventfd_signal(wakeFD)
        }
    }

    /// Runs `task` on the loop after `nanoseconds`. Call on the loop thread.
    /// - Returns: a handle that cancels the timer.
    @discardableResult
    public func schedule(afterNanoseconds nanoseconds: UInt64, _ task: @escaping () -> Void) -> TimerHandle {
        preconditionInEventLoop()
        let deadline = MonotonicClock.nanoseconds() &+ nanoseconds
        let handle = TimerHandle(id: timers.insert(deadline: deadline, task))
        armTimerIfNeeded()
        return handle
    }

    /// Cancels a timer made by `schedule`. Call on the loop thread.
    public func cancel(_ handle: TimerHandle) {
        preconditionInEventLoop()
        timers.remove(handle.id)
    }

    // MARK: Registration (loop thread only)

    /// Registers `fd` and returns the token to use for later changes.
    public func register(fd: Int32, interest: Interest, handler: any Selectable) throws -> UInt64 {
        preconditionInEventLoop()
        generation &+= 1
        let token = (generation << 32) | UInt64(UInt32(bitPattern: fd))
        try syscallChecked("epoll_ctl") {
            CLinuxSystem_epoll_ctl(epollFD, CLinuxSystem_EPOLL_CTL_ADD, fd, interest.epollBits, token)
        }
        registrations[token] = handler
        return token
    }

    public func reregister(fd: Int32, token: UInt64, interest: Interest) throws {
        preconditionInEventLoop()
        try syscallChecked("epoll_ctl") {
            CLinuxSystem_epoll_ctl(epollFD, CLinuxSystem_EPOLL_CTL_MOD, fd, interest.epollBits, token)
        }
    }

    /// Removes the registration; call before closing `fd`.
    public func deregister(fd: Int32, token: UInt64) {
        preconditionInEventLoop()
        _ = CLinuxSystem_epoll_ctl(epollFD, CLinuxSystem_EPOLL_CTL_DEL, fd, 0, token)
        registrations[token] = nil
    }

    /// The number of registered file descriptors (listeners and connections).
    public var registrationCount: Int {
        preconditionInEventLoop()
        return registrations.count
    }

    // MARK: Lifecycle

    /// Asks the loop to exit after the current iteration; the thread then closes its descriptors.
    public func stop() {
        execute { [self] in self.isStopping = true }
    }

    /// Blocks until the loop thread has exited.
    public func waitUntilStopped() {
        finishedCondition.lock()
        while !finished.withLock({ $0 }) { finishedCondition.wait() }
        finishedCondition.unlock()
    }

    // MARK: The loop

    private func run() {
        let capacity = 256
        let events = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity)
        let datas = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        defer {
            events.deallocate()
            datas.deallocate()
        }
        while !isStopping {
            let count = CLinuxSystem_epoll_wait(epollFD, events, datas, Int32(capacity), -1)
            if count < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in 0..<Int(count) {
                let token = datas[i]
                let bits = events[i]
                switch token {
                case Self.wakeToken:
                    _ = CLinuxSystem_eventfd_drain(wakeFD)
                case Self.timerToken:
                    _ = CLinuxSystem_timerfd_drain(timerFD)
                    armedDeadline = 0
                default:
                    guard let handler = registrations[token] else { continue }
                    handler.handleEvents(
                        readable: bits & CLinuxSystem_EPOLLIN != 0,
                        writable: bits & CLinuxSystem_EPOLLOUT != 0,
                        hangup: bits & (CLinuxSystem_EPOLLHUP | CLinuxSystem_EPOLLERR) != 0,
                        peerShutdown: bits & CLinuxSystem_EPOLLRDHUP != 0)
                }
            }
            runExpiredTimers()
            runPendingTasks()
            armTimerIfNeeded()
        }
        runPendingTasks()
        close(epollFD)
        close(wakeFD)
        close(timerFD)
        finishedCondition.lock()
        finished.withLock { $0 = true }
        finishedCondition.broadcast()
        finishedCondition.unlock()
    }

    private func runPendingTasks() {
        // A bounded number of rounds so a task that re-queues itself cannot starve I/O.
        for _ in 0..<4 {
            wakeupPending.store(false, ordering: .releasing)
            let tasks = pendingTasks.withLock { tasks -> [@Sendable () -> Void] in
                let taken = tasks
                tasks.removeAll(keepingCapacity: true)
                return taken
            }
            if tasks.isEmpty { return }
            for task in tasks { task() }
        }
        // More work remains: make sure the next epoll_wait returns at once.
        if !wakeupPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = CLinuxSystem_eventfd_signal(wakeFD)
        }
    }

    private func runExpiredTimers() {
        guard !timers.isEmpty else { return }
        let now = MonotonicClock.nanoseconds()
        while let (_, task) = timers.popDue(notAfter: now) { task() }
    }

    private func armTimerIfNeeded() {
        guard let next = timers.earliestDeadline() else { return }
        if armedDeadline != 0 && armedDeadline <= next { return }
        let now = MonotonicClock.nanoseconds()
        let delay = next > now ? next - now : 1
        _ = CLinuxSystem_timerfd_arm(timerFD, Int64(clamping: delay))
        armedDeadline = next
    }
}
