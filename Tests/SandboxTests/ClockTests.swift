// APNs Sandbox — the manual and system clocks.
import Dispatch
import Sandbox
import Synchronization
import Testing
import Support

@Suite struct ClockTests {
    /// ManualClock runs due tasks in deadline order (ties in scheduling order), at their deadline's time.
    @Test func manualClockRunsTasksInDeadlineOrder() {
        let clock = ManualClock(nowMilliseconds: 1000)
        let log = Locked<[String]>([])
        clock.schedule(afterMilliseconds: 30) { log.withLock { $0.append("c@\(clock.nowMilliseconds)") } }
        clock.schedule(afterMilliseconds: 10) {
            log.withLock { $0.append("a@\(clock.nowMilliseconds)") }
            clock.schedule(afterMilliseconds: 5) { log.withLock { $0.append("nested@\(clock.nowMilliseconds)") } }
        }
        clock.schedule(afterMilliseconds: 10) { log.withLock { $0.append("b@\(clock.nowMilliseconds)") } }
        let cancelled = clock.schedule(afterMilliseconds: 20) { log.withLock { $0.append("cancelled") } }
        cancelled.cancel()
        #expect(cancelled.isCancelled)
        clock.advance(byMilliseconds: 9)
        #expect(log.withLock { $0 }.isEmpty)
        clock.advance(byMilliseconds: 100)
        #expect(log.withLock { $0 } == ["a@1010", "b@1010", "nested@1015", "c@1030"])
        #expect(clock.nowMilliseconds == 1109)
        #expect(clock.monotonicNanoseconds > 0)
        #expect(clock.pendingTaskCount == 0)
    }

    /// SystemClock fires tasks on its queue and drops cancelled ones.
    @Test func systemClockFiresAndCancels() {
        let clock = SystemClock()
        let fired = DispatchSemaphore(value: 0)
        let log = Locked<[Int]>([])
        // Due long after the others, so that it is surely cancelled before it could fire, however
        // busy the machine is (with 5 ms it sometimes fired first under the full test suite).
        let cancelled = clock.schedule(afterMilliseconds: 30_000) { log.withLock { $0.append(0) } }
        clock.schedule(afterMilliseconds: 20) {
            log.withLock { $0.append(2) }
            fired.signal()
        }
        clock.schedule(afterMilliseconds: 1) { log.withLock { $0.append(1) } }
        cancelled.cancel()
        #expect(fired.wait(timeout: .now() + 5) == .success)
        #expect(log.withLock { $0 } == [1, 2])
        #expect(clock.pendingTaskCount == 0)
        #expect(clock.nowMilliseconds > 1_600_000_000_000)
    }
}
