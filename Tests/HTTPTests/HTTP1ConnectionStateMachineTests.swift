// APNs Sandbox — keep-alive, closing and shutdown of an HTTP/1.1 connection, as a state machine: no socket.
import Testing

@testable import HTTP

@Suite struct HTTP1ConnectionStateMachineTests {
    /// An open connection reads requests, keeps alive those that ask, and may take an h2c upgrade.
    @Test func openKeepsAliveWhatAsks() {
        let machine = HTTP1ConnectionStateMachine()
        #expect(machine.readsRequests && machine.mayUpgrade && machine.takesCallbacks)
        #expect(machine.keepsAlive(requested: true))
        #expect(!machine.keepsAlive(requested: false))
        #expect(machine.responsesWritten(isIdle: true) == .none, "an idle open connection stays")
    }

    /// Shutdown closes an idle connection at once; a busy one keeps reading, answers with `Connection: close`,
    /// and closes when idle.
    @Test func shutdownClosesWhenIdle() {
        var idle = HTTP1ConnectionStateMachine()
        #expect(idle.shutdownRequested(isIdle: true) == .closeAfterFlush)

        var busy = HTTP1ConnectionStateMachine()
        #expect(busy.shutdownRequested(isIdle: false) == .none)
        #expect(busy.state == .shuttingDown)
        #expect(busy.readsRequests, "a request partly read is still read")
        #expect(!busy.keepsAlive(requested: true), "and answered with Connection: close")
        #expect(!busy.mayUpgrade)
        #expect(busy.responsesWritten(isIdle: false) == .none)
        #expect(busy.responsesWritten(isIdle: true) == .closeAfterFlush)
    }

    /// The last request stops reading; shutdown then changes nothing (the response closes the connection).
    @Test func theLastRequestStopsReading() {
        var machine = HTTP1ConnectionStateMachine()
        machine.lastRequestRead()
        #expect(machine.state == .closing)
        #expect(!machine.readsRequests && !machine.mayUpgrade && machine.takesCallbacks)
        #expect(machine.shutdownRequested(isIdle: false) == .none)
        #expect(machine.state == .closing)
        #expect(machine.responsesWritten(isIdle: true) == .none, "the last response closes by itself")
    }

    /// After an h2c upgrade or the close, nothing comes back to the handler.
    @Test func upgradedAndClosedTakeNothing() {
        var upgraded = HTTP1ConnectionStateMachine()
        upgraded.switchedProtocols()
        #expect(!upgraded.readsRequests && !upgraded.takesCallbacks)
        #expect(upgraded.shutdownRequested(isIdle: true) == .none)
        var closed = HTTP1ConnectionStateMachine()
        closed.connectionClosed()
        #expect(!closed.readsRequests && !closed.takesCallbacks)
        closed.lastRequestRead()
        #expect(closed.state == .closed)
    }
}
