// APNs Sandbox — the epoll event loop: cross-thread tasks and timers.
import Foundation
import Support
import Synchronization
import Testing
import Transport

@Suite struct EventLoopTests {
    /// Tasks queued from other threads run on the loop, in order, and the loop knows its thread.
    @Test func runsTasksFromOtherThreadsInOrder() throws {
        let group = try EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        #expect(!loop.inEventLoop)
        let order = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for i in 0..<1000 {
            loop.execute {
                precondition(loop.inEventLoop)
                order.withLock { $0.append(i) }
                if i == 999 { done.signal() }
            }
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(order.withLock { $0 } == Array(0..<1000))
    }

    /// Timers fire in deadline order, not in scheduling order, and a cancelled timer never fires.
    @Test func firesTimersByDeadlineAndHonoursCancel() throws {
        let group = try EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let fired = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let start = MonotonicClock.nanoseconds()
        let elapsed = Locked<UInt64>(0)
        loop.execute {
            loop.schedule(afterNanoseconds: 60_000_000) {
                fired.withLock { $0.append("60ms") }
                elapsed.withLock { $0 = MonotonicClock.nanoseconds() - start }
                done.signal()
            }
            let cancelled = loop.schedule(afterNanoseconds: 30_000_000) { fired.withLock { $0.append("cancelled") } }
            loop.schedule(afterNanoseconds: 20_000_000) { fired.withLock { $0.append("20ms") } }
            loop.cancel(cancelled)
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(fired.withLock { $0 } == ["20ms", "60ms"])
        #expect(elapsed.withLock { $0 } >= 60_000_000)
    }

    /// A group of several loops gives each its own thread and stops them all.
    @Test func groupStopsEveryLoop() throws {
        let group = try EventLoopGroup(count: 3)
        #expect(group.loops.count == 3)
        let ran = Locked<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for loop in group.loops {
            loop.execute {
                ran.withLock { $0 += 1 }
                done.signal()
            }
        }
        for _ in 0..<3 { #expect(done.wait(timeout: .now() + 5) == .success) }
        group.shutdown()
        #expect(ran.withLock { $0 } == 3)
    }
}
