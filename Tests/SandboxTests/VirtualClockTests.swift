// APNs Sandbox — the virtual clock: frozen, advanced, set, resumed and back to real time.
import Dispatch
import Glibc
import Sandbox
import Synchronization
import Testing
import Support

@Suite struct VirtualClockTests {
    /// Waits (polling, at most `seconds`) until `condition` holds.
    private func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = realSeconds() + seconds
        while !condition() {
            guard realSeconds() < deadline else { return false }
            usleep(1_000)
        }
        return true
    }

    /// Frozen, time stands still; an advance runs the due tasks in deadline order (ties in scheduling order)
    /// with the clock reading each one's deadline, tasks scheduled on the way included, and returns after.
    @Test func advanceRunsDueTasksInOrderAtTheirDeadlines() {
        let clock = VirtualClock(startingAt: 1_000_000, frozen: true)
        let log = Locked<[String]>([])
        clock.schedule(afterMilliseconds: 30) { log.withLock { $0.append("c@\(clock.nowMilliseconds)") } }
        clock.schedule(afterMilliseconds: 10) {
            log.withLock { $0.append("a@\(clock.nowMilliseconds)") }
            clock.schedule(afterMilliseconds: 5) { log.withLock { $0.append("nested@\(clock.nowMilliseconds)") } }
        }
        clock.schedule(afterMilliseconds: 10) { log.withLock { $0.append("b@\(clock.nowMilliseconds)") } }
        clock.schedule(afterMilliseconds: 20) { log.withLock { $0.append("cancelled") } }.cancel()
        clock.schedule(afterMilliseconds: 500) { log.withLock { $0.append("later") } }
        usleep(20_000)
        #expect(clock.nowMilliseconds == 1_000_000, "frozen")
        #expect(log.withLock { $0 }.isEmpty)
        let reading = clock.advance(byMilliseconds: 100)
        #expect(log.withLock { $0 } == ["a@1000010", "b@1000010", "nested@1000015", "c@1000030"])
        #expect(reading.nowMilliseconds == 1_000_100 && reading.mode == .frozen)
        #expect(clock.pendingTaskCount == 1)
    }

    /// A task due now runs without an advance, even while frozen; tasks due later do not.
    @Test func frozenClockRunsWhatIsAlreadyDue() {
        let clock = VirtualClock(frozen: true)
        let ran = Locked(0)
        clock.schedule(afterMilliseconds: 0) { ran.withLock { $0 += 1 } }
        clock.schedule(atMonotonicNanoseconds: clock.monotonicNanoseconds - 5_000_000) { ran.withLock { $0 += 1 } }
        clock.schedule(afterMilliseconds: 1) { ran.withLock { $0 += 100 } }
        #expect(eventually { ran.withLock { $0 } == 2 })
        usleep(20_000)
        #expect(ran.withLock { $0 } == 2)
        #expect(clock.pendingTaskCount == 1)
    }

    /// A follow-up anchored to an earlier deadline, scheduled from another queue after that deadline's task
    /// hopped there, still runs: at once when the clock is past its anchor, else within the next advance.
    @Test func anchoredFollowUpsRunEvenWhenScheduledLate() {
        let clock = VirtualClock(frozen: true)
        let other = DispatchQueue(label: "other")
        let start = clock.monotonicNanoseconds
        let log = Locked<[String]>([])
        clock.schedule(afterMilliseconds: 30_000) {
            other.async {
                log.withLock { $0.append("budget") }
                clock.schedule(atMonotonicNanoseconds: start + 31_000_000_000) { log.withLock { $0.append("grace") } }
                clock.schedule(atMonotonicNanoseconds: start + 40_000_000_000) { log.withLock { $0.append("later") } }
            }
        }
        clock.advance(byMilliseconds: 31_000)
        #expect(eventually { log.withLock { $0 } == ["budget", "grace"] })
        clock.advance(byMilliseconds: 9_000)
        #expect(eventually { log.withLock { $0 } == ["budget", "grace", "later"] })
    }

    /// Setting the time backwards moves wall time only: monotonic time and the timers stay. Forwards it is an
    /// advance.
    @Test func setMovesWallTimeAndNeverMonotonicBackwards() {
        let clock = VirtualClock(startingAt: 5_000_000, frozen: true)
        let ran = Locked(false)
        clock.schedule(afterMilliseconds: 1_000) { ran.withLock { $0 = true } }
        let monotonic = clock.monotonicNanoseconds
        let back = clock.set(toMilliseconds: 1_000_000)
        #expect(back.nowMilliseconds == 1_000_000 && back.mode == .frozen)
        #expect(clock.monotonicNanoseconds == monotonic)
        #expect(!ran.withLock { $0 })
        let forward = clock.set(toMilliseconds: 1_001_000)
        #expect(forward.nowMilliseconds == 1_001_000)
        #expect(ran.withLock { $0 })
        #expect(clock.monotonicNanoseconds == monotonic + 1_000_000_000)
    }

    /// Advancing a running clock keeps it running, its offset moved by exactly the jump; resume runs at real
    /// speed from the frozen instant; back to real is offset 0 and runs what fell due meanwhile.
    @Test func runningResumeAndBackToReal() {
        let clock = VirtualClock()
        #expect(clock.reading.isReal)
        #expect(abs(clock.nowMilliseconds - realMilliseconds()) <= 1)
        let advanced = clock.advance(byMilliseconds: 3_600_000)
        #expect(advanced.mode == .running && advanced.offsetMilliseconds == 3_600_000)
        let frozen = clock.freeze()
        #expect(frozen.mode == .frozen)
        usleep(30_000)
        #expect(clock.nowMilliseconds == frozen.nowMilliseconds)
        let monotonicBefore = clock.monotonicNanoseconds
        let resumed = clock.resume()
        #expect(resumed.mode == .running && resumed.nowMilliseconds == frozen.nowMilliseconds)
        let fired = Locked(false)
        clock.schedule(afterMilliseconds: 20) { fired.withLock { $0 = true } }
        #expect(eventually { fired.withLock { $0 } }, "a running clock's timers fire in real time")
        #expect(clock.monotonicNanoseconds > monotonicBefore)

        // Back to real after a freeze: the time frozen is caught up, and what fell due in it runs.
        _ = clock.backToReal()
        let refrozen = clock.freeze()
        let caughtUp = Locked(false)
        clock.schedule(afterMilliseconds: 20) { caughtUp.withLock { $0 = true } }
        usleep(40_000)
        #expect(!caughtUp.withLock { $0 })
        let real = clock.backToReal()
        #expect(caughtUp.withLock { $0 }, "ran within backToReal")
        #expect(real.isReal && real.nowMilliseconds >= refrozen.nowMilliseconds + 40)
        #expect(clock.monotonicNanoseconds >= monotonicBefore)
    }

    /// Back to real after the clock was ahead moves wall time back, not monotonic time.
    @Test func backToRealFromAheadKeepsMonotonicTime() {
        let clock = VirtualClock(startingAt: realMilliseconds() + 86_400_000)
        let monotonic = clock.monotonicNanoseconds
        let real = clock.backToReal()
        #expect(real.isReal)
        #expect(abs(real.nowMilliseconds - realMilliseconds()) <= 2)
        #expect(clock.monotonicNanoseconds >= monotonic)
    }

    /// Huge jumps: a set to the year 9999 gets there (wall time), repeated 100-year advances never overflow
    /// (monotonic time stops at its ceiling), and a task due on the way still runs.
    @Test func hugeJumpsNeitherOverflowNorFallShort() {
        let clock = VirtualClock(startingAt: 0, frozen: true)
        let ran = Locked(false)
        clock.schedule(afterMilliseconds: 86_400_000) { ran.withLock { $0 = true } }
        let far = clock.set(toMilliseconds: VirtualClock.latestMilliseconds)
        #expect(far.nowMilliseconds == VirtualClock.latestMilliseconds && ran.withLock { $0 })
        var monotonic = clock.monotonicNanoseconds
        clock.set(toMilliseconds: 0)
        for _ in 0..<5 {
            let reading = clock.advance(byMilliseconds: VirtualClock.maxJumpMilliseconds)
            #expect(reading.monotonicNanoseconds >= monotonic)
            monotonic = reading.monotonicNanoseconds
        }
        #expect(clock.nowMilliseconds == 5 * VirtualClock.maxJumpMilliseconds)
        clock.schedule(afterMilliseconds: Int64.max) {}
        #expect(clock.pendingTaskCount == 1)
    }

    /// A task may steer the clock (it runs inline on the clock's queue, no deadlock).
    @Test func aTaskMayAdvanceTheClock() {
        let clock = VirtualClock(startingAt: 0, frozen: true)
        let log = Locked<[Int64]>([])
        clock.schedule(afterMilliseconds: 10) {
            clock.schedule(afterMilliseconds: 5) { log.withLock { $0.append(clock.nowMilliseconds) } }
            clock.advance(byMilliseconds: 100)
        }
        clock.advance(byMilliseconds: 10)
        #expect(log.withLock { $0 } == [15])
        #expect(clock.nowMilliseconds == 110)
    }

    /// Reset returns to the state the clock was made in.
    @Test func resetReturnsToTheStartState() {
        let clock = VirtualClock(startingAt: 1_700_000_000_000, frozen: true)
        // Many times: a reset of a running clock once landed a millisecond past the start when the machine was
        // slow (under ThreadSanitizer) — it moved the wall, then froze a clock still running.
        for _ in 0..<2_000 {
            clock.advance(byMilliseconds: 86_400_000)
            clock.resume()
            let reset = clock.reset()
            #expect(reset.nowMilliseconds == 1_700_000_000_000 && reset.mode == .frozen)
            if reset.nowMilliseconds != 1_700_000_000_000 { break }
        }
        let plain = VirtualClock()
        plain.set(toMilliseconds: 0)
        plain.freeze()
        #expect(plain.reset().isReal)
    }

    /// ManualClock's anchored schedule falls due at the anchor (rounded up to its millisecond).
    @Test func manualClockSchedulesAtAMonotonicInstant() {
        let clock = ManualClock(nowMilliseconds: 1_000)
        let ran = Locked<Int64?>(nil)
        clock.schedule(atMonotonicNanoseconds: clock.monotonicNanoseconds + 2_500_000) {
            ran.withLock { $0 = clock.nowMilliseconds }
        }
        clock.advance(byMilliseconds: 2)
        #expect(ran.withLock { $0 } == nil)
        clock.advance(byMilliseconds: 5)
        #expect(ran.withLock { $0 } == 1_003)
    }
}

/// Real wall time in ms (CLOCK_REALTIME), as the virtual clock's offsets are measured against.
private func realMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// Real monotonic seconds.
private func realSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
