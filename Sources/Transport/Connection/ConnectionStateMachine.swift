// APNs Sandbox — the life of one connection (back-pressure, closing, timeouts) as a state machine that returns actions.

/// The rules of one ``Connection``: which bytes it still takes, when it reads, when it closes. No I/O and no
/// clock; the connection reports what happened and carries out what comes back.
///
/// ### Phases
/// `open` → (``requestClose()``: the handler's `closeAfterFlush`, the peer's TLS close_notify, a TLS error)
/// `draining`: nothing more is accepted from the handler or delivered to it (TLS), what is queued goes out →
/// (everything sent, ``allOutputSent(pendingBytes:now:)``) `lingering`: the write side is shut down and the
/// peer's bytes are read and dropped until it closes, `lingerTimeout` passes, or `lingerMaxBytes` have been
/// dropped (``discardedWhileLingering(_:now:)``) → `closed`. ``close()`` ends any phase at once (EOF, a socket
/// error, a timeout from ``tick(now:)``).
///
/// Past `lingerMaxBytes` reading stops, and the connection closes once `lingerReadGrace` has passed and the
/// peer has acknowledged everything sent (the connection asks the kernel): a close with unread bytes is a
/// reset, which drops an answer still in flight, and makes a client that is still writing fail its write
/// before it has read the answer; with reading stopped, the grace lets it find the answer on its next poll.
/// The peer's FIN or hangup then changes nothing (``peerWentAway()``): the socket is no longer watched
/// (epoll would report the hangup again on every wait) and the tick's ``TickAction/closeIfAcknowledged``
/// closes it. A peer that acknowledges nothing is closed at the deadline, as before.
///
/// Beside the phase: whether the TLS handshake still runs, why reading is paused (output above the high
/// watermark until it falls to the low one, or the handler asked), whether the handler waits for a drain
/// callback, and since when the socket has refused output (the write-stall timeout).
///
/// A value type (no allocation per event) confined to its connection's loop. Times are monotonic nanoseconds.
struct ConnectionStateMachine {
    enum Phase: Equatable {
        case open
        /// Closing once what is queued has gone to the socket.
        case draining
        /// The write side is shut down; the peer's bytes are dropped until it closes or `deadline` passes.
        case lingering(deadline: UInt64)
        case closed
    }

    /// After everything queued went to the socket.
    enum AllSentAction: Equatable {
        /// Nothing to do (already lingering or closed).
        case none
        /// Shut down the write side (the linger starts), then apply the interest if it changed.
        case shutDownWriteSide(Interest?)
        /// Apply the interest if it changed, then call the handler's drain callback if asked.
        case stayOpen(Interest?, notifyHandler: Bool)
    }

    enum TickAction: Equatable {
        case none
        /// Close now (write stall, linger over, handshake too slow).
        case close
        /// Lingering past `lingerMaxBytes` for `lingerReadGrace`: close now if the peer has acknowledged
        /// everything sent.
        case closeIfAcknowledged
        /// Give the handler its tick (its own timeouts).
        case tickHandler
    }

    /// The peer shut down its side (FIN) or the socket hung up, with nothing left to read that would show it.
    enum PeerGoneAction: Equatable {
        /// Close now: the peer is gone, and nothing sent is at stake.
        case close
        /// Lingering past `lingerMaxBytes` (unread input: a close now is a reset): stop watching the socket and
        /// leave the close to the tick (``TickAction/closeIfAcknowledged``, after `lingerReadGrace`) or the deadline.
        case stopWatching
    }

    enum ShutdownAction: Equatable {
        case none
        /// Close now: nothing worth finishing (a handshake, no handler).
        case close
        /// Let the handler finish its work, then flush what it wrote.
        case notifyHandler
    }

    let limits: ConnectionLimits
    let createdAt: UInt64
    private(set) var phase = Phase.open
    /// The interest registered with the loop.
    private(set) var interest: Interest = [.read, .peerShutdown]
    private(set) var isHandshaking: Bool
    /// Output went above the high watermark and has not yet fallen to the low one.
    private(set) var isPausedByOutput = false
    /// The handler paused reading (``Connection/setReadingPaused(_:)``).
    private(set) var isPausedByHandler = false
    /// The handler wants ``ConnectionHandler/connectionDidDrainOutput(_:)`` once all output is sent.
    private(set) var wantsDrainNotification = false
    /// When the socket last took bytes while output was blocked (nil: not blocked).
    private(set) var writeBlockedSince: UInt64?
    /// The peer's bytes dropped while lingering.
    private(set) var lingerDiscardedBytes = 0
    /// When `lingerDiscardedBytes` reached `lingerMaxBytes` (reading stopped).
    private(set) var lingeredEnoughAt: UInt64?
    /// The socket is no longer registered with the loop (the peer left while the close waits for its acknowledgement).
    private(set) var isUnwatched = false

    /// - Parameter isTLS: a TLS connection starts in its handshake.
    init(limits: ConnectionLimits, isTLS: Bool, createdAt: UInt64) {
        self.limits = limits
        self.isHandshaking = isTLS
        self.createdAt = createdAt
    }

    var isClosed: Bool { phase == .closed }

    /// Whether the handler's output is still taken, and (TLS) decrypted input still delivered to it.
    var isOpen: Bool { phase == .open }

    var isLingering: Bool {
        if case .lingering = phase { return true }
        return false
    }

    /// Lingering, and `lingerMaxBytes` of the peer's bytes have been dropped: nothing more is read.
    var hasLingeredEnough: Bool { isLingering && lingerDiscardedBytes >= limits.lingerMaxBytes }

    // MARK: Events

    mutating func handshakeCompleted() {
        isHandshaking = false
    }

    /// Asks for the close after flushing (from `open` only).
    /// - Returns: true when this started the close (`draining`); false when it was already closing.
    mutating func requestClose() -> Bool {
        guard phase == .open else { return false }
        phase = .draining
        return true
    }

    /// Closes (from any phase).
    /// - Returns: false when it was already closed.
    mutating func close() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        return true
    }

    /// The socket took bytes: a write stall, if any, starts over.
    mutating func socketTookOutput(now: UInt64) {
        if writeBlockedSince != nil { writeBlockedSince = now }
    }

    /// The socket refused output (EAGAIN): the write stall starts, unless it has already.
    mutating func socketRefusedOutput(now: @autoclosure () -> UInt64) {
        if writeBlockedSince == nil { writeBlockedSince = now() }
    }

    /// Everything queued for the socket went out; `pendingBytes` are still waiting before it (TLS plaintext).
    mutating func allOutputSent(pendingBytes: Int, now: @autoclosure () -> UInt64) -> AllSentAction {
        writeBlockedSince = nil
        switch phase {
        case .closed, .lingering:
            return .none
        case .draining:
            let time = now()
            phase = .lingering(deadline: time &+ limits.lingerTimeout)
            // A bound of 0: nothing is read while lingering, the grace starts now.
            if hasLingeredEnough { lingeredEnoughAt = time }
            return .shutDownWriteSide(updateInterest(pendingBytes: pendingBytes, hasUnsentSocketBytes: false))
        case .open:
            let wasPaused = isPausedByOutput
            let interest = updateInterest(pendingBytes: pendingBytes, hasUnsentSocketBytes: false)
            let notify = (wasPaused && !isPausedByOutput) || wantsDrainNotification
            if notify { wantsDrainNotification = false }
            return .stayOpen(interest, notifyHandler: notify)
        }
    }

    /// `count` bytes of the peer were read and dropped while lingering.
    /// - Returns: the interest to register when this reached `lingerMaxBytes` (reading stops: a tick closes
    ///   after `lingerReadGrace` once the peer has acknowledged everything sent, or the deadline does); nil
    ///   while reading goes on.
    mutating func discardedWhileLingering(_ count: Int, now: UInt64) -> Interest? {
        guard isLingering, !hasLingeredEnough else { return nil }
        lingerDiscardedBytes += count
        guard hasLingeredEnough else { return nil }
        lingeredEnoughAt = now
        return updateInterest(pendingBytes: 0, hasUnsentSocketBytes: false) ?? interest
    }

    /// The peer's FIN (`EPOLLRDHUP`) or a hangup arrived while no read follows to see it.
    mutating func peerWentAway() -> PeerGoneAction {
        guard hasLingeredEnough else { return .close }
        isUnwatched = true
        return .stopWatching
    }

    mutating func setPausedByHandler(_ paused: Bool) {
        isPausedByHandler = paused
    }

    /// The handler wants a drain callback.
    /// - Returns: false when nothing is waiting (no callback will come) or the connection is closed.
    mutating func requestDrainNotification(pendingBytes: Int) -> Bool {
        guard pendingBytes > 0, phase != .closed else { return false }
        wantsDrainNotification = true
        return true
    }

    /// The interest the connection wants now: reading unless paused (always while lingering, to see the peer
    /// go, until it has lingered enough), writing while the socket has bytes it refused, the peer's FIN always (nothing once unwatched).
    /// - Returns: the new interest when it differs from the registered one (now recorded as registered).
    mutating func updateInterest(pendingBytes: Int, hasUnsentSocketBytes: Bool) -> Interest? {
        guard phase != .closed, !isUnwatched else { return nil }
        if pendingBytes > limits.outputHighWatermark {
            isPausedByOutput = true
        } else if pendingBytes <= limits.outputLowWatermark {
            isPausedByOutput = false
        }
        var wanted: Interest = .peerShutdown
        if isLingering ? !hasLingeredEnough : !isPausedByOutput && !isPausedByHandler { wanted.insert(.read) }
        if hasUnsentSocketBytes { wanted.insert(.write) }
        guard wanted != interest else { return nil }
        interest = wanted
        return wanted
    }

    /// The periodic tick: the write-stall, linger and handshake timeouts, else the handler's own.
    func tick(now: UInt64) -> TickAction {
        guard phase != .closed else { return .none }
        if let since = writeBlockedSince, now &- since > limits.writeStallTimeout { return .close }
        if case .lingering(let deadline) = phase {
            if now >= deadline { return .close }
            guard let since = lingeredEnoughAt, now &- since >= limits.lingerReadGrace else { return .none }
            return .closeIfAcknowledged
        }
        if isHandshaking { return now &- createdAt > limits.handshakeTimeout ? .close : .none }
        return .tickHandler
    }

    /// The server shuts down.
    func gracefulShutdownRequested(hasHandler: Bool) -> ShutdownAction {
        guard phase != .closed else { return .none }
        return isHandshaking || !hasHandler ? .close : .notifyHandler
    }
}
