// APNs Sandbox — when an HTTP/2 session sends which GOAWAY and closes, as a state machine: no nghttp2, no socket.
import Testing

@testable import HTTP

@Suite struct HTTP2SessionStateMachineTests {
    /// Shutdown is two-step: the notice, then after the grace the final GOAWAY (NO_ERROR, Shutdown); asking again does nothing.
    @Test func shutdownSendsTheNoticeThenTheFinalGoAway() {
        var machine = HTTP2SessionStateMachine()
        #expect(machine.shutdownRequested() == .sendShutdownNotice)
        #expect(machine.state == .shutdownNoticeSent && machine.isGoingAway && machine.isRunning)
        #expect(machine.shutdownRequested() == .none, "one notice")
        #expect(machine.idleTimedOut() == .none, "no idle GOAWAY while shutting down")
        #expect(machine.shutdownGraceElapsed() == .submitGoAway(.shutdown))
        #expect(machine.state == .finalGoAwaySent)
        #expect(machine.shutdownGraceElapsed() == .none, "one final GOAWAY")
        #expect(GoAwayReason.shutdown.errorCode == 0)
    }

    /// An idle connection gets the final GOAWAY at once (IdleTimeout), and no shutdown notice after it.
    @Test func idleTimeoutSendsTheFinalGoAway() {
        var machine = HTTP2SessionStateMachine()
        #expect(machine.idleTimedOut() == .submitGoAway(.idleTimeout))
        #expect(machine.state == .finalGoAwaySent)
        #expect(machine.idleTimedOut() == .none)
        #expect(machine.shutdownRequested() == .none)
        #expect(machine.shutdownGraceElapsed() == .none)
    }

    /// After the final GOAWAY the connection closes once no stream is open and nothing is left to write.
    @Test func afterTheFinalGoAwayTheLastStreamClosesTheConnection() {
        var machine = HTTP2SessionStateMachine()
        #expect(!machine.shouldClose(sessionWantsRead: true, sessionWantsWrite: false, openStreams: 0), "active: stays open")
        _ = machine.shutdownRequested()
        #expect(!machine.shouldClose(sessionWantsRead: true, sessionWantsWrite: false, openStreams: 0), "the notice keeps it open")
        _ = machine.shutdownGraceElapsed()
        #expect(!machine.shouldClose(sessionWantsRead: true, sessionWantsWrite: false, openStreams: 1), "a stream in flight")
        #expect(!machine.shouldClose(sessionWantsRead: true, sessionWantsWrite: true, openStreams: 0), "frames still to write")
        #expect(machine.shouldClose(sessionWantsRead: true, sessionWantsWrite: false, openStreams: 0))
    }

    /// nghttp2 done both ways (GOAWAY exchanged, or the peer's protocol error) closes in any state.
    @Test func aSessionThatWantsNothingCloses() {
        #expect(HTTP2SessionStateMachine().shouldClose(sessionWantsRead: false, sessionWantsWrite: false, openStreams: 3))
    }

    /// A violation terminates (ENHANCE_YOUR_CALM) from any running state, once; nothing runs after it.
    @Test func aViolationTerminatesOnce() {
        for prepare in [{ (_: inout HTTP2SessionStateMachine) in }, { _ = $0.shutdownRequested() }, { _ = $0.idleTimedOut() }] {
            var machine = HTTP2SessionStateMachine()
            prepare(&machine)
            #expect(machine.violated(.rapidReset) == .terminate(.rapidReset))
            #expect(machine.isTerminated && !machine.isRunning)
            #expect(machine.violated(.discardedData) == .none, "terminated once")
            #expect(machine.shutdownGraceElapsed() == .none, "no final GOAWAY after ours")
            #expect(machine.shutdownRequested() == .none)
        }
        #expect(GoAwayReason(.rapidReset).errorCode == 0xb)
        #expect(GoAwayReason(.discardedData).errorCode == 0xb)
    }

    /// A fault's GOAWAY names the stream before the faulted one (never below 0) and terminates, from any running
    /// state, once; nothing after a violation or the close.
    @Test func aFaultGoAwayTerminatesOnce() {
        for prepare in [{ (_: inout HTTP2SessionStateMachine) in }, { _ = $0.shutdownRequested() }, { _ = $0.idleTimedOut() }] {
            var machine = HTTP2SessionStateMachine()
            prepare(&machine)
            #expect(machine.faultRequestedGoAway(on: 7, errorCode: 2, debugData: [0x61])
                == .faultGoAway(lastStreamID: 5, errorCode: 2, debugData: [0x61]))
            #expect(machine.isTerminated && !machine.isRunning)
            #expect(machine.faultRequestedGoAway(on: 9, errorCode: 0, debugData: []) == .none, "terminated once")
            #expect(machine.shutdownGraceElapsed() == .none, "no final GOAWAY after ours")
        }
        var first = HTTP2SessionStateMachine()
        #expect(first.faultRequestedGoAway(on: 1, errorCode: 0, debugData: []) == .faultGoAway(lastStreamID: 0, errorCode: 0, debugData: []))
        var violated = HTTP2SessionStateMachine()
        _ = violated.violated(.rapidReset)
        #expect(violated.faultRequestedGoAway(on: 3, errorCode: 0, debugData: []) == .none)
        var closed = HTTP2SessionStateMachine()
        closed.connectionClosed()
        #expect(closed.faultRequestedGoAway(on: 3, errorCode: 0, debugData: []) == .none)
    }

    /// A protocol error sends nghttp2's GOAWAY and closes, without changing the state; a closed session does nothing.
    @Test func aProtocolErrorSendsAndCloses() {
        var machine = HTTP2SessionStateMachine()
        #expect(machine.protocolError() == .sendAndClose)
        #expect(machine.state == .active)
        machine.connectionClosed()
        #expect(machine.protocolError() == .none)
        #expect(machine.violated(.rapidReset) == .none)
        #expect(machine.idleTimedOut() == .none)
        #expect(machine.isClosed && !machine.isRunning && !machine.isGoingAway)
    }
}
