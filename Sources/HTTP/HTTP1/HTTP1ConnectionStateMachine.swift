// APNs Sandbox — keep-alive, closing and shutdown of an HTTP/1.1 connection, as a state machine that returns actions.

/// Whether an HTTP/1.1 connection reads more requests, keeps them alive, may switch to h2c, and when it closes:
/// pure rules, no I/O. ``HTTP1ConnectionHandler`` reports what happened and carries out what comes back.
///
/// ```
/// open ──shutdown──▶ shuttingDown ──no request in progress──▶ (close after flush)
/// open, shuttingDown ──last request read──▶ closing ──its response written──▶ (close after flush)
/// open ──h2c upgrade──▶ upgraded
/// any ──connection closed──▶ closed
/// ```
///
/// - `shuttingDown`: requests already read are answered; a request read now is answered with
///   `Connection: close` (which makes it the last); the connection closes once no request is queued or
///   partly read.
/// - `closing`: the last request has been read (`Connection: close`, HTTP/1.0 without keep-alive, a parse
///   error answered, a response body without framing that ends with the connection); nothing more is
///   read, and the handler closes once its response is written.
/// - `upgraded`: the connection belongs to an ``HTTP2ConnectionHandler``; work coming back here is dropped.
///
/// A value type confined to its connection's loop.
struct HTTP1ConnectionStateMachine {
    enum State: Equatable {
        case open
        case shuttingDown
        case closing
        case upgraded
        case closed
    }

    enum Action: Equatable {
        case none
        case closeAfterFlush
    }

    private(set) var state = State.open

    /// Whether more requests are read.
    var readsRequests: Bool { state == .open || state == .shuttingDown }

    /// Whether a request's h2c upgrade offer may be taken (the handler adds: cleartext, nothing queued).
    var mayUpgrade: Bool { state == .open }

    /// Whether work finishing later (a handler's response, a streaming body) is still taken.
    var takesCallbacks: Bool { state != .upgraded && state != .closed }

    /// Whether a request that asks for keep-alive gets it.
    func keepsAlive(requested: Bool) -> Bool { requested && state == .open }

    // MARK: Events

    /// No further request is read: the one just read asked to close, a parse error or timeout is being
    /// answered, or a response body without framing ends with the connection.
    mutating func lastRequestRead() {
        if readsRequests { state = .closing }
    }

    /// The server shuts down; `isIdle`: no request is queued or partly read.
    mutating func shutdownRequested(isIdle: Bool) -> Action {
        switch state {
        case .open:
            state = .shuttingDown
        case .shuttingDown, .closing:
            break
        case .upgraded, .closed:
            return .none
        }
        return isIdle ? .closeAfterFlush : .none
    }

    /// The responses ready were written; `isIdle`: no request is queued or partly read now.
    func responsesWritten(isIdle: Bool) -> Action {
        state == .shuttingDown && isIdle ? .closeAfterFlush : .none
    }

    /// The connection went to HTTP/2 (h2c).
    mutating func switchedProtocols() {
        state = .upgraded
    }

    mutating func connectionClosed() {
        state = .closed
    }
}
