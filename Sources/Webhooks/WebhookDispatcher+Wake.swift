// APNs Sandbox — the dispatcher's wake-ups for due retries and breaker trials, on the injected clock.
import Sandbox

/// On the dispatcher's queue. A retry is due at a wall time of the clock: one clock timer, set for the earliest
/// wake-up, pumps when the clock gets there, so a virtual clock advanced past a retry's time runs it at once
/// (the real-time tick of ``WebhookDispatcher/tickMilliseconds`` only looks again for what is already due).
extension WebhookDispatcher {
    /// Pumps once the clock reaches `wall` (ms).
    func wake(at wall: Int64) {
        let replaced = state.withLock { state -> (ScheduledTask?, Bool) in
            guard state.isRunning else { return (nil, false) }
            _ = state.wake.times.insert(deadline: wall, ())
            if let armed = state.wake.armedFor, armed <= wall { return (nil, false) }
            state.wake.armedFor = wall
            defer { state.wake.timer = nil }
            return (state.wake.timer, true)
        }
        replaced.0?.cancel()
        if replaced.1 { armWake(for: wall) }
    }

    private func armWake(for wall: Int64) {
        let timer = clock.schedule(afterMilliseconds: wall - clock.nowMilliseconds) { [self] in
            queue.async { self.woken(wall) }
        }
        let kept = state.withLock { state -> Bool in
            guard state.isRunning, state.wake.armedFor == wall, state.wake.timer == nil else { return false }
            state.wake.timer = timer
            return true
        }
        if !kept { timer.cancel() }
    }

    /// The timer set for `wall` fired: drops the wake-ups that are due, pumps, and sets the timer for the next.
    private func woken(_ wall: Int64) {
        let next = state.withLock { state -> Int64? in
            guard state.isRunning, state.wake.armedFor == wall else { return nil }
            state.wake.timer = nil
            state.wake.armedFor = nil
            let now = clock.nowMilliseconds
            while state.wake.times.popDue(notAfter: now) != nil {}
            guard let next = state.wake.times.earliestDeadline() else { return nil }
            state.wake.armedFor = next
            return next
        }
        pump()
        if let next { armWake(for: next) }
    }
}
