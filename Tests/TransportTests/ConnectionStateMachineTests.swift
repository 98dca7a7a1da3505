// APNs Sandbox — a connection's lifecycle as a state machine: no socket, no clock.
import Testing

@testable import Transport

@Suite struct ConnectionStateMachineTests {
    private static let second: UInt64 = 1_000_000_000

    private func makeMachine(isTLS: Bool = false, _ change: (inout ConnectionLimits) -> Void = { _ in }) -> ConnectionStateMachine {
        var limits = ConnectionLimits()
        limits.outputHighWatermark = 1000
        limits.outputLowWatermark = 100
        change(&limits)
        return ConnectionStateMachine(limits: limits, isTLS: isTLS, createdAt: 0)
    }

    /// A new connection is open, reads, and watches for the peer's FIN.
    @Test func startsOpenAndReading() {
        let machine = makeMachine()
        #expect(machine.phase == .open)
        #expect(machine.isOpen && !machine.isClosed && !machine.isLingering)
        #expect(machine.interest == [.read, .peerShutdown])
        #expect(!machine.isHandshaking, "cleartext has no handshake")
        #expect(makeMachine(isTLS: true).isHandshaking)
    }

    /// Output above the high watermark stops reading; it resumes only at the low one, and the handler hears of it.
    @Test func outputAboveTheHighWatermarkPausesReadingUntilTheLowOne() {
        var machine = makeMachine()
        #expect(machine.updateInterest(pendingBytes: 1001, hasUnsentSocketBytes: true) == [.peerShutdown, .write])
        #expect(machine.isPausedByOutput)
        #expect(machine.updateInterest(pendingBytes: 500, hasUnsentSocketBytes: true) == nil, "between the marks: still paused")
        #expect(machine.isPausedByOutput)
        #expect(machine.allOutputSent(pendingBytes: 0, now: 5) == .stayOpen([.read, .peerShutdown], notifyHandler: true))
        #expect(!machine.isPausedByOutput)
        #expect(machine.allOutputSent(pendingBytes: 0, now: 6) == .stayOpen(nil, notifyHandler: false), "told once")
    }

    /// A handler's pause holds whatever the output does; lifting it reads again.
    @Test func aHandlersPauseHoldsUntilLifted() {
        var machine = makeMachine()
        machine.setPausedByHandler(true)
        #expect(machine.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: false) == [.peerShutdown])
        #expect(machine.allOutputSent(pendingBytes: 0, now: 1) == .stayOpen(nil, notifyHandler: false))
        machine.setPausedByHandler(false)
        #expect(machine.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: false) == [.read, .peerShutdown])
    }

    /// A drain callback is promised only while something waits, and given once, when everything has gone.
    @Test func drainNotificationIsGivenOnceWhenAllOutputIsSent() {
        var machine = makeMachine()
        let promisedWhenEmpty = machine.requestDrainNotification(pendingBytes: 0)
        let promised = machine.requestDrainNotification(pendingBytes: 10)
        #expect(!promisedWhenEmpty, "nothing waits: no callback will come")
        #expect(promised)
        #expect(machine.allOutputSent(pendingBytes: 0, now: 1) == .stayOpen(nil, notifyHandler: true))
        #expect(machine.allOutputSent(pendingBytes: 0, now: 2) == .stayOpen(nil, notifyHandler: false))
    }

    /// Close after flush: the output is refused from then on; once it is all sent the write side is shut
    /// down and the connection lingers, reading (and dropping) until the deadline closes it.
    @Test func closeAfterFlushDrainsThenLingersThenCloses() {
        var machine = makeMachine { $0.lingerTimeout = 2 * Self.second }
        machine.setPausedByHandler(true)
        _ = machine.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: false)
        let started = machine.requestClose()
        let again = machine.requestClose()
        #expect(started)
        #expect(!again, "only the first request closes")
        #expect(machine.phase == .draining && !machine.isOpen)
        #expect(machine.tick(now: Self.second) == .tickHandler, "the handler still ticks while output drains")
        #expect(machine.allOutputSent(pendingBytes: 0, now: Self.second) == .shutDownWriteSide([.read, .peerShutdown]),
                "a lingering connection reads even when the handler had paused")
        #expect(machine.phase == .lingering(deadline: 3 * Self.second))
        #expect(machine.allOutputSent(pendingBytes: 0, now: Self.second) == .none, "shut down once")
        #expect(machine.tick(now: 2 * Self.second) == .none)
        #expect(machine.tick(now: 3 * Self.second) == .close)
        let closed = machine.close()
        let closedAgain = machine.close()
        #expect(closed)
        #expect(!closedAgain, "closed once")
        #expect(machine.tick(now: 4 * Self.second) == .none)
        #expect(machine.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: true) == nil, "no registration after close")
    }

    /// A lingering connection drops the peer's bytes only up to `lingerMaxBytes` (an upload that goes on after
    /// its 413): then it stops reading and, once `lingerReadGrace` has passed (the peer's time to read the
    /// answer), each tick asks to close once the peer has acknowledged what was sent (a close with unread bytes
    /// is a reset); the deadline still closes one that never acknowledges.
    @Test func lingeringStopsReadingPastItsByteBound() {
        var machine = makeMachine {
            $0.lingerTimeout = 2 * Self.second
            $0.lingerMaxBytes = 1000
            $0.lingerReadGrace = Self.second / 2
        }
        #expect(machine.discardedWhileLingering(500, now: 0) == nil, "not lingering: nothing counted")
        #expect(machine.lingerDiscardedBytes == 0)
        _ = machine.requestClose()
        #expect(machine.allOutputSent(pendingBytes: 0, now: 0) == .shutDownWriteSide(nil))
        #expect(machine.discardedWhileLingering(600, now: 0) == nil, "below the bound: reading goes on")
        #expect(machine.tick(now: Self.second / 2) == .none)
        #expect(!machine.hasLingeredEnough)
        #expect(machine.discardedWhileLingering(400, now: Self.second / 2) == [.peerShutdown],
                "at the bound: reading stops, the FIN is still seen")
        #expect(machine.hasLingeredEnough)
        #expect(machine.discardedWhileLingering(100, now: Self.second / 2) == nil, "told once")
        #expect(machine.lingerDiscardedBytes == 1000)
        #expect(machine.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: false) == nil, "no read interest comes back")
        #expect(machine.tick(now: Self.second / 2 + Self.second / 4) == .none, "the peer's time to read the answer")
        #expect(machine.tick(now: Self.second) == .closeIfAcknowledged)
        #expect(machine.tick(now: 2 * Self.second) == .close, "the deadline closes whatever the peer acknowledged")
    }

    /// The peer's FIN (or a hangup) closes at once — open, paused, draining, or lingering while still reading
    /// (there the read sees the EOF first) — except past the linger's byte bound: its input is unread, so a
    /// close now would be a reset that can drop the answer the peer has not read yet. There it stops watching
    /// the socket (its hangup is level-triggered) and the tick closes once the grace has passed and the peer
    /// has acknowledged everything sent, or at the deadline regardless.
    @Test func aPeerLeavingPastTheByteBoundWaitsForItsAcknowledgement() {
        var open = makeMachine()
        open.setPausedByHandler(true)
        _ = open.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: false)
        #expect(open.peerWentAway() == .close, "a paused reader whose peer left is gone")

        var machine = makeMachine {
            $0.lingerTimeout = 2 * Self.second
            $0.lingerMaxBytes = 1000
            $0.lingerReadGrace = Self.second / 2
        }
        _ = machine.requestClose()
        #expect(machine.peerWentAway() == .close, "draining (not yet lingering): as before, the peer is gone")
        var lingering = makeMachine {
            $0.lingerTimeout = 2 * Self.second
            $0.lingerMaxBytes = 1000
        }
        _ = lingering.requestClose()
        _ = lingering.allOutputSent(pendingBytes: 0, now: 0)
        _ = lingering.discardedWhileLingering(999, now: 0)
        #expect(lingering.peerWentAway() == .close, "below the bound the read saw the EOF: no unread input")
        #expect(!lingering.isUnwatched)

        _ = machine.allOutputSent(pendingBytes: 0, now: 0)
        #expect(machine.discardedWhileLingering(1000, now: 0) == [.peerShutdown])
        #expect(machine.peerWentAway() == .stopWatching, "never a blind close past the bound")
        #expect(machine.tick(now: Self.second / 4) == .none, "the peer's time to read the answer, even though it left")
        #expect(machine.isUnwatched && !machine.isClosed)
        #expect(machine.updateInterest(pendingBytes: 0, hasUnsentSocketBytes: true) == nil, "unwatched: no registration")
        #expect(machine.tick(now: Self.second) == .closeIfAcknowledged, "the tick closes once the peer acknowledged")
        #expect(machine.tick(now: 2 * Self.second) == .close, "the deadline closes at the latest")
    }

    /// A socket that refuses output and takes nothing for `writeStallTimeout` is closed; any byte it takes restarts the wait.
    @Test func aWriteStallClosesUnlessTheSocketTakesBytes() {
        var machine = makeMachine { $0.writeStallTimeout = 30 * Self.second }
        machine.socketTookOutput(now: Self.second)
        #expect(machine.writeBlockedSince == nil, "taking bytes while not blocked starts nothing")
        machine.socketRefusedOutput(now: 10 * Self.second)
        machine.socketRefusedOutput(now: 20 * Self.second)
        #expect(machine.writeBlockedSince == 10 * Self.second, "the stall starts at the first refusal")
        #expect(machine.tick(now: 35 * Self.second) == .tickHandler)
        machine.socketTookOutput(now: 35 * Self.second)
        #expect(machine.tick(now: 60 * Self.second) == .tickHandler, "the stall started over at 35 s")
        #expect(machine.tick(now: 66 * Self.second) == .close)
        #expect(machine.allOutputSent(pendingBytes: 0, now: 66 * Self.second) == .stayOpen(nil, notifyHandler: false))
        #expect(machine.writeBlockedSince == nil, "everything sent: not blocked")
    }

    /// A TLS handshake not done within `handshakeTimeout` closes; the handler gets no tick before it is done.
    @Test func aSlowHandshakeCloses() {
        var machine = makeMachine(isTLS: true) { $0.handshakeTimeout = 10 * Self.second }
        #expect(machine.tick(now: 5 * Self.second) == .none)
        #expect(machine.tick(now: 11 * Self.second) == .close)
        machine.handshakeCompleted()
        #expect(machine.tick(now: 11 * Self.second) == .tickHandler)
    }

    /// Shutdown closes a connection in its handshake or without a handler at once; others finish their work.
    @Test func gracefulShutdownClosesOnlyWhatHasNothingToFinish() {
        var tls = makeMachine(isTLS: true)
        #expect(tls.gracefulShutdownRequested(hasHandler: true) == .close)
        tls.handshakeCompleted()
        #expect(tls.gracefulShutdownRequested(hasHandler: true) == .notifyHandler)
        #expect(makeMachine().gracefulShutdownRequested(hasHandler: false) == .close)
        var closed = makeMachine()
        _ = closed.close()
        #expect(closed.gracefulShutdownRequested(hasHandler: true) == .none)
    }
}
