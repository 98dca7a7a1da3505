// APNs Sandbox — the body of a streaming response (Server-Sent Events), written from any thread.
import Synchronization
import Support

/// The body of a response that is sent while it is being produced (``HandlerResult/stream(_:_:)``).
///
/// Any thread may ``write(_:)``; the connection's loop takes the bytes when it is woken and frames
/// them (HTTP/1.1 chunks, HTTP/2 DATA frames). Writes never block: bytes wait in this object until
/// the loop sends them. A client that reads so slowly that more than ``maxBufferedBytes`` wait has
/// its stream ended after what is already queued (an SSE client then reconnects and resumes).
///
/// The stream ends when the producer calls ``finish()`` and everything queued has gone out, when
/// the client goes away (connection closed, HTTP/2 stream reset), or when the server shuts down.
/// Either way the ``onClose(_:)`` handlers run once, on whatever thread ended it.
public final class HTTPBodyWriter: Sendable {
    public static let defaultMaxBufferedBytes = 4 << 20

    private struct State {
        var pending: [UInt8] = []
        /// No more writes are accepted; the connection ends the stream once `pending` is sent.
        var isFinished = false
        /// The stream is over (sent, reset or closed); handlers have run or are running.
        var isClosed = false
        var isWakeScheduled = false
        var wake: (@Sendable () -> Void)?
        var closeHandlers: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())
    /// Most bytes waiting to be sent before the stream is ended as too slow.
    public let maxBufferedBytes: Int

    public init(maxBufferedBytes: Int = HTTPBodyWriter.defaultMaxBufferedBytes) {
        self.maxBufferedBytes = maxBufferedBytes
    }

    /// Queues `bytes` for sending.
    /// - Returns: false when the stream has finished or closed (the bytes are dropped), or when
    ///   the client is too slow: the stream is then finished after what was queued before.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, wake) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            guard !state.isFinished, !state.isClosed else { return (false, nil) }
            if state.pending.count + bytes.count > maxBufferedBytes {
                state.isFinished = true
                return (false, Self.scheduleWake(&state))
            }
            state.pending.append(contentsOf: bytes)
            return (true, Self.scheduleWake(&state))
        }
        wake?()
        return accepted
    }

    /// Ends the body once everything written has been sent. Later writes are refused.
    public func finish() {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.isFinished, !state.isClosed else { return nil }
            state.isFinished = true
            return Self.scheduleWake(&state)
        }
        wake?()
    }

    /// Bytes written and not yet taken by the connection (a reader's backlog, roughly).
    public var pendingByteCount: Int {
        state.withLock { $0.pending.count }
    }

    /// Whether the stream is over (or finishing): writing is pointless.
    public var isClosed: Bool {
        state.withLock { $0.isClosed || $0.isFinished }
    }

    /// Runs `handler` once when the stream is over; at once if it already is.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.isClosed else { return true }
            state.closeHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    private static func scheduleWake(_ state: inout State) -> (@Sendable () -> Void)? {
        guard !state.isWakeScheduled, let wake = state.wake else { return nil }
        state.isWakeScheduled = true
        return wake
    }

    // MARK: For connection handlers (on the connection's loop)

    /// Connects the writer to its connection: `wake` must hop to the loop and send what ``take()`` gives.
    /// Wakes at once if something was written before.
    func attach(wake: @escaping @Sendable () -> Void) {
        let wakeNow = state.withLock { state -> (@Sendable () -> Void)? in
            state.wake = wake
            guard !state.pending.isEmpty || state.isFinished else { return nil }
            return Self.scheduleWake(&state)
        }
        wakeNow?()
    }

    /// The bytes waiting to be sent and whether the producer has finished; the next write wakes again.
    func take() -> (bytes: [UInt8], isFinished: Bool) {
        state.withLock { state in
            state.isWakeScheduled = false
            var bytes: [UInt8] = []
            swap(&bytes, &state.pending)
            return (bytes, state.isFinished)
        }
    }

    /// Marks the stream over (sent, reset or closed) and runs the close handlers.
    func close() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.isClosed else { return [] }
            state.isClosed = true
            state.isFinished = true
            state.pending = []
            state.wake = nil
            defer { state.closeHandlers = [] }
            return state.closeHandlers
        }
        for handler in handlers { handler() }
    }
}
