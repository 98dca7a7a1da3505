// APNs Sandbox — one accepted TCP connection: socket I/O, TLS, back-pressure, closing.
import CLinuxSystem
import Glibc
import Support
import Synchronization

/// Limits a connection enforces on its own (the protocol handler adds its own).
public struct ConnectionLimits: Sendable {
    /// Output bytes above which the connection stops reading from the peer.
    public var outputHighWatermark: Int = 1 << 20
    /// Output bytes below which reading resumes.
    public var outputLowWatermark: Int = 256 << 10
    /// Time allowed for a TLS handshake (nanoseconds).
    public var handshakeTimeout: UInt64 = 10_000_000_000
    /// How long a closing connection keeps draining the peer's bytes after its last response.
    public var lingerTimeout: UInt64 = 2_000_000_000
    /// The most of the peer's bytes a closing connection reads and drops (an upload that goes on after its
    /// 413): past it, reading stops and it closes `lingerReadGrace` later once the peer has acknowledged
    /// everything sent (``ConnectionStateMachine``).
    public var lingerMaxBytes: Int = 1 << 20
    /// Past `lingerMaxBytes`, how long the peer has to read the answer before the connection closes with the
    /// peer's input unread (a reset): reading has stopped, so an uploading peer is blocked on a full window and
    /// its next poll finds the answer. Closing at once lost it to a client that was between two polls (curl:
    /// "Send failure: Broken pipe" instead of the 413).
    public var lingerReadGrace: UInt64 = 500_000_000
    /// A connection whose socket has refused output for this long without taking any of it (the peer
    /// stopped reading) is closed, releasing what it holds (nanoseconds).
    public var writeStallTimeout: UInt64 = 30_000_000_000

    public init() {}
}

/// An accepted TCP connection confined to one event loop.
///
/// Bytes read from the socket are decrypted (TLS) and handed to the `ConnectionHandler`;
/// bytes the handler writes are buffered, encrypted and sent when `flush()` runs (automatically
/// after each read, or explicitly after work finished elsewhere). When the output buffer passes
/// the high watermark reading pauses until the peer catches up; when the socket takes nothing for
/// `writeStallTimeout` the connection is closed. The peer's FIN closes the connection at once, whether
/// it is read as EOF or seen (`EPOLLRDHUP`) while reading is paused: a client that shut down its side is
/// treated as gone, as an EOF always was here, so what the connection holds is released and its
/// handler cancels the work (a paused reader would otherwise never notice, and the level-triggered
/// event would spin the loop). The one exception is a close lingering past its byte bound: the peer's
/// unread input would turn the close into a reset of the answer still in flight, so it waits (unwatched)
/// for `lingerReadGrace` and until the peer has acknowledged that answer, or the linger's deadline.
///
/// The lifecycle (open, draining, lingering, closed; reading paused or not; timeouts) is decided by a
/// ``ConnectionStateMachine``; this class does the I/O it asks for.
///
/// Threading: every method must be called on `loop`.
public final class Connection: Selectable, ConnectionContext {
    private static let nextID = Atomic<UInt64>(1)

    public let id: UInt64
    public let loop: EventLoop
    public let remoteAddress: SocketAddress
    public let localPort: Int
    public let isTLS: Bool
    /// Free-form label of the listener that accepted this connection (`tls`, `cleartext`, …).
    public let listenerName: String
    public var handler: (any ConnectionHandler)?
    public let createdAt: UInt64
    /// Last time bytes arrived from the peer (monotonic nanoseconds).
    public private(set) var lastReadAt: UInt64
    /// When the socket last took output bytes (monotonic ns).
    public private(set) var lastWriteAt: UInt64

    private var fd: Int32
    private var token: UInt64 = 0
    private let tls: TLSSession?
    private var plaintextOut: [UInt8] = []
    private var socketOut: [UInt8] = []
    private var socketOutOffset = 0
    private var state: ConnectionStateMachine
    private let onClose: (Connection) -> Void

    init(
        fd: Int32, loop: EventLoop, remoteAddress: SocketAddress, localPort: Int, listenerName: String,
        tls: TLSContext?, limits: ConnectionLimits, onClose: @escaping (Connection) -> Void
    ) throws {
        self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        self.fd = fd
        self.loop = loop
        self.remoteAddress = remoteAddress
        self.localPort = localPort
        self.listenerName = listenerName
        self.isTLS = tls != nil
        self.tls = try tls.map { try TLSSession(context: $0) }
        self.onClose = onClose
        let createdAt = MonotonicClock.nanoseconds()
        self.createdAt = createdAt
        self.lastReadAt = createdAt
        self.lastWriteAt = createdAt
        self.state = ConnectionStateMachine(limits: limits, isTLS: tls != nil, createdAt: createdAt)
    }

    func start() throws {
        token = try loop.register(fd: fd, interest: state.interest, handler: self)
    }

    public var isClosed: Bool { state.isClosed }

    /// The ALPN protocol selected in the TLS handshake (`h2`, `http/1.1`), if any.
    public var alpn: String? { tls?.alpn }

    /// The client certificate presented in the TLS handshake, if any.
    public var peerCertificate: PeerCertificate? { tls?.peerCertificate }

    /// Bytes waiting to go to the socket.
    public var pendingOutputBytes: Int { plaintextOut.count + socketOut.count - socketOutOffset }

    /// The most this connection held for its peer at some point: the high-water mark of its output buffer, or
    /// what its handler still held when it closed (responses a zero-window HTTP/2 peer never took), whichever
    /// is more. Set by ``close()``; what decides whether the close is worth a ``MemoryTrimmer`` trim.
    public private(set) var peakHeldBytes = 0

    /// True while the TLS handshake is still running.
    public var isHandshaking: Bool { state.isHandshaking }

    // MARK: Writing

    /// Queues bytes for the peer. They go out at the next `flush()`.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard state.isOpen, bytes.count > 0 else { return }
        if tls != nil {
            plaintextOut.append(contentsOf: bytes)
        } else {
            socketOut.append(contentsOf: bytes)
        }
        peakHeldBytes = max(peakHeldBytes, pendingOutputBytes)
    }

    /// Sends what is queued. Safe to call at any time on the loop; a no-op when nothing is queued.
    public func flush() {
        guard !isClosed else { return }
        if let tls {
            if !plaintextOut.isEmpty {
                do {
                    try plaintextOut.withUnsafeBytes { try tls.encrypt($0) }
                } catch {
                    close()
                    return
                }
                plaintextOut.removeAll(keepingCapacity: plaintextOut.count <= 64 << 10)
            }
            if tls.hasPendingCiphertext { tls.drainCiphertext(into: &socketOut) }
        }
        writeToSocket()
    }

    private func writeToSocket() {
        while socketOutOffset < socketOut.count {
            let result: IOResult<Int>
            do {
                result = try socketOut.withUnsafeBytes { raw in
                    try syscall("send") {
                        // `!`: the loop runs only while offset < count, so the buffer is not empty.
                        send(fd, raw.baseAddress! + socketOutOffset, raw.count - socketOutOffset, Int32(MSG_NOSIGNAL))
                    }
                }
            } catch {
                close()
                return
            }
            switch result {
            case .processed(let n):
                socketOutOffset += n
                lastWriteAt = MonotonicClock.nanoseconds()
                state.socketTookOutput(now: lastWriteAt)
            case .wouldBlock:
                state.socketRefusedOutput(now: MonotonicClock.nanoseconds())
                updateInterest()
                return
            }
        }
        socketOut.removeAll(keepingCapacity: socketOut.count <= 256 << 10)
        socketOutOffset = 0
        switch state.allOutputSent(pendingBytes: pendingOutputBytes, now: MonotonicClock.nanoseconds()) {
        case .none:
            break
        case .shutDownWriteSide(let interest):
            Glibc.shutdown(fd, Int32(SHUT_WR))
            register(interest)
        case .stayOpen(let interest, let notifyHandler):
            register(interest)
            if notifyHandler { handler?.connectionDidDrainOutput(self) }
        }
    }

    // MARK: Reading control

    /// Stops (or resumes) reading from the peer, e.g. while a pipelined request is processed.
    public func setReadingPaused(_ paused: Bool) {
        state.setPausedByHandler(paused)
        updateInterest()
    }

    private func updateInterest() {
        register(state.updateInterest(
            pendingBytes: pendingOutputBytes, hasUnsentSocketBytes: socketOutOffset < socketOut.count))
    }

    /// Registers a changed interest with the loop (nil: unchanged).
    private func register(_ interest: Interest?) {
        guard let interest else { return }
        try? loop.reregister(fd: fd, token: token, interest: interest)
    }

    // MARK: Events

    public func handleEvents(readable: Bool, writable: Bool, hangup: Bool, peerShutdown: Bool) {
        if writable { flush() }
        if readable && !isClosed { readFromSocket() }
        // (With `readable` the EOF is read first, after the bytes before it.)
        guard (hangup || peerShutdown) && !isClosed && !readable else { return }
        switch state.peerWentAway() {
        case .close:
            close()
        case .stopWatching:
            // Past the linger's byte bound the peer's input is unread: closing now would reset the answer it
            // may not have read. Unwatched, the socket cannot spin the loop; the tick closes it after the grace.
            loop.deregister(fd: fd, token: token)
        }
    }

    private func readFromSocket() {
        let buffer = loop.readBuffer
        let result: IOResult<Int>
        do {
            result = try syscall("recv") { recv(fd, buffer.baseAddress, buffer.count, 0) }
        } catch {
            close()
            return
        }
        guard case .processed(let count) = result else { return }
        if count == 0 {
            // EOF from the peer.
            close()
            return
        }
        lastReadAt = MonotonicClock.nanoseconds()
        if state.isLingering {
            // Discard: we are only waiting for the peer to go away, and not for ever.
            // Past the byte bound reading stops; the tick closes once the peer had time to read the answer.
            if let interest = state.discardedWhileLingering(count, now: lastReadAt) { register(interest) }
            return
        }
        let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: count)
        if let tls {
            do {
                _ = try tls.receive(bytes, scratch: loop.plaintextBuffer) { plaintext in
                    if state.isOpen { handler?.connectionDidReceive(self, bytes: plaintext) }
                }
                if tls.receivedCloseNotify {
                    tls.shutdown()
                    _ = state.requestClose()
                }
            } catch {
                // Bad handshake or corrupt record: send the alert OpenSSL queued, then go.
                tls.drainCiphertext(into: &socketOut)
                _ = state.requestClose()
            }
            if state.isHandshaking && tls.isHandshakeComplete { state.handshakeCompleted() }
        } else {
            // (Also while draining: a cleartext handler still sees the bytes; what it writes is dropped.)
            handler?.connectionDidReceive(self, bytes: bytes)
        }
        flush()
    }

    // MARK: Closing

    /// Asks for one ``ConnectionHandler/connectionDidDrainOutput(_:)`` when all output has gone to the
    /// socket: for a handler that stopped producing because too much was waiting (a streaming body).
    /// Without it the callback comes only when reading had been paused, which a partial drain can undo.
    /// - Returns: false when nothing is waiting any more (no callback will come: produce more now).
    @discardableResult
    public func notifyWhenDrained() -> Bool {
        state.requestDrainNotification(pendingBytes: pendingOutputBytes)
    }

    /// Sends what is queued, then closes (with a short linger so the peer reads the last bytes).
    public func closeAfterFlush() {
        guard state.requestClose() else { return }
        tls?.shutdown()
        flush()
    }

    /// Closes the socket now.
    public func close() {
        guard state.close() else { return }
        peakHeldBytes = max(peakHeldBytes, pendingOutputBytes, handler?.heldOutputBytes ?? 0)
        loop.deregister(fd: fd, token: token)
        Glibc.close(fd)
        fd = -1
        plaintextOut = []
        socketOut = []
        handler?.connectionDidClose(self)
        handler = nil
        onClose(self)
    }

    /// Closes when the kernel holds nothing this side sent that the peer has not acknowledged: a close with
    /// unread input is a reset, and a reset drops what is still in flight (the answer the peer should read).
    /// - Returns: whether it closed.
    @discardableResult
    private func closeIfAcknowledged() -> Bool {
        guard (Posix.unacknowledgedOutputBytes(fd) ?? 0) == 0 else { return false }
        close()
        return true
    }

    func tick(now: UInt64) {
        switch state.tick(now: now) {
        case .none: break
        case .close: close()
        case .closeIfAcknowledged: closeIfAcknowledged()
        case .tickHandler: handler?.connectionTick(self, now: now)
        }
    }

    /// The server shuts down (called from a loop task, never while a read is being dispatched).
    func beginGracefulShutdown() {
        switch state.gracefulShutdownRequested(hasHandler: handler != nil) {
        case .none:
            break
        case .close:
            close()
        case .notifyHandler:
            handler?.connectionBeginGracefulShutdown(self)
            flush()
        }
    }
}
