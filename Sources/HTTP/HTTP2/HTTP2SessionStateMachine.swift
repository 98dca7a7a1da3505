// APNs Sandbox — when an HTTP/2 connection sends which GOAWAY and when it closes, as a state machine that returns actions.

/// The life of one HTTP/2 session: pure rules, no nghttp2, no I/O, no clock. ``HTTP2ConnectionHandler`` reports
/// what happened and carries out what comes back; every GOAWAY the server sends is decided here.
///
/// ```
/// active ──shutdown──▶ shutdownNoticeSent ──grace──▶ finalGoAwaySent ──streams done, output sent──▶ (close)
/// active ──idle timeout──▶ finalGoAwaySent
/// active, shutdownNoticeSent, finalGoAwaySent ──violation──▶ terminated ──GOAWAY written──▶ (close)
/// active, shutdownNoticeSent, finalGoAwaySent ──fault GOAWAY──▶ terminated ──GOAWAY written──▶ (close)
/// any ──connection closed──▶ closed
/// ```
///
/// - Shutdown is two-step (RFC 9113 §6.8): a notice (last stream id 2^31-1, so requests already in flight are
///   still taken), then after ``HTTP2ConnectionHandler/shutdownNoticeGrace`` the final GOAWAY naming the last
///   stream processed. Both NO_ERROR with `{"reason":"Shutdown"}`.
/// - Idle timeout: the final GOAWAY at once (NO_ERROR, `{"reason":"IdleTimeout"}`).
/// - A violation of the ``ConnectionGuard``: GOAWAY ENHANCE_YOUR_CALM; nothing more is read, started or sent.
/// - A handler's response with ``ConnectionFault/goAway(errorCode:debugData:)``: what nghttp2 has queued goes
///   out, then that GOAWAY (the stream before the faulted one as last-stream-id); like a violation, nothing
///   more is read, started or sent after it.
/// - A protocol error of the peer: nghttp2 has queued its own GOAWAY (PROTOCOL_ERROR and the like, with its
///   text as debug data); it is sent and the connection closes after it. The state does not change.
///
/// A value type (no allocation per event) confined to its connection's loop.
struct HTTP2SessionStateMachine {
    enum State: Equatable {
        case active
        /// The shutdown notice is out; the final GOAWAY follows after the grace.
        case shutdownNoticeSent
        /// The final GOAWAY (NO_ERROR) is queued: the connection closes once its streams are done.
        case finalGoAwaySent
        /// Our last GOAWAY is written (ENHANCE_YOUR_CALM, or a fault's): it is the last frame.
        case terminated
        /// The connection closed.
        case closed
    }

    enum Action: Equatable {
        case none
        /// Finish streaming bodies, send what nghttp2 has queued, then write the shutdown notice (GOAWAY
        /// NO_ERROR, last stream id 2^31-1, ``GoAwayReason/shutdown``) and schedule the final GOAWAY.
        case sendShutdownNotice
        /// Queue GOAWAY with nghttp2: the last stream processed, `reason`'s error code and debug data.
        case submitGoAway(GoAwayReason)
        /// End the session for `violation`: GOAWAY ENHANCE_YOUR_CALM with its reason, every stream's work
        /// dropped; the connection closes once the frame is out.
        case terminate(ConnectionGuard.Violation)
        /// Send what nghttp2 has queued (its GOAWAY for the peer's protocol error), then close after flushing.
        case sendAndClose
        /// A fault's GOAWAY (``ConnectionFault/goAway(errorCode:debugData:)``): send what nghttp2 has queued,
        /// then GOAWAY with these values; every stream's work is dropped and the connection closes once it is out.
        case faultGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
    }

    private(set) var state = State.active

    // MARK: Queries

    /// Whether bytes from the peer are still processed, requests started and timeouts checked.
    var isRunning: Bool {
        switch state {
        case .active, .shutdownNoticeSent, .finalGoAwaySent: true
        case .terminated, .closed: false
        }
    }

    /// A GOAWAY of ours is out or queued.
    var isGoingAway: Bool { state != .active && state != .closed }

    var isTerminated: Bool { state == .terminated }

    var isClosed: Bool { state == .closed }

    /// Whether the connection closes now that everything nghttp2 had is written: when nghttp2 wants neither
    /// to read nor to write (GOAWAYs both ways, or the peer's protocol error), or after the final GOAWAY once
    /// no stream is open and nothing more is to be written.
    /// (`sessionWantsWrite` is asked only when it matters.)
    func shouldClose(sessionWantsRead: Bool, sessionWantsWrite: @autoclosure () -> Bool, openStreams: Int) -> Bool {
        if !sessionWantsRead && !sessionWantsWrite() { return true }
        return state == .finalGoAwaySent && openStreams == 0 && !sessionWantsWrite()
    }

    // MARK: Events

    /// The server shuts down.
    mutating func shutdownRequested() -> Action {
        guard state == .active else { return .none }
        state = .shutdownNoticeSent
        return .sendShutdownNotice
    }

    /// The pause between the shutdown notice and the final GOAWAY is over.
    mutating func shutdownGraceElapsed() -> Action {
        guard state == .shutdownNoticeSent else { return .none }
        state = .finalGoAwaySent
        return .submitGoAway(.shutdown)
    }

    /// The connection has had no request activity for the idle timeout.
    mutating func idleTimedOut() -> Action {
        guard state == .active else { return .none }
        state = .finalGoAwaySent
        return .submitGoAway(.idleTimeout)
    }

    /// The peer went over a ``ConnectionGuard`` limit.
    mutating func violated(_ violation: ConnectionGuard.Violation) -> Action {
        guard isRunning else { return .none }
        state = .terminated
        return .terminate(violation)
    }

    /// A handler answered stream `streamID` with ``ConnectionFault/goAway(errorCode:debugData:)``: the stream is
    /// not answered, the GOAWAY names the stream before it (`streamID` − 2, at least 0) as the last one.
    mutating func faultRequestedGoAway(on streamID: Int32, errorCode: UInt32, debugData: [UInt8]) -> Action {
        guard isRunning else { return .none }
        state = .terminated
        return .faultGoAway(lastStreamID: max(0, streamID - 2), errorCode: errorCode, debugData: debugData)
    }

    /// nghttp2 rejected the peer's bytes (a connection error).
    func protocolError() -> Action {
        isClosed ? .none : .sendAndClose
    }

    /// The connection closed.
    mutating func connectionClosed() {
        state = .closed
    }
}
