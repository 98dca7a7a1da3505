// APNs Sandbox — HTTP/2 connection faults (the sandbox's fault injection): GOAWAY, RST_STREAM, close, stall,
// trickle, a cut of SETTINGS_MAX_CONCURRENT_STREAMS (carried out in `+StreamLimit.swift`).
import CNGHTTP2
import Transport

extension HTTP2ConnectionHandler {
    /// The connection's faults in progress. Loop-confined, like the handler.
    struct FaultState {
        /// Responses held by stalls, by stream (nil duration: held until the connection ends).
        var stalled: [Int32: HTTPResponse] = [:]
        /// A stall holds the connection: nothing read is processed, no request is started.
        private(set) var isStalled = false
        /// Bytes that arrived while stalled (at most what one socket read delivered after the pause).
        var heldInput: [UInt8] = []
        /// A cut of SETTINGS_MAX_CONCURRENT_STREAMS (``ConnectionFault/limitConcurrentStreams(to:forNanoseconds:)``).
        var cut: (limit: UInt32, until: UInt64, timer: UInt64)?
        /// SETTINGS_MAX_CONCURRENT_STREAMS in force apart from a cut: the initial value, then what handlers set.
        var streamLimit: UInt32 = 0
        /// The loop timers of these faults, cancelled when the connection closes.
        var timers: [UInt64: TimerHandle] = [:]
        var nextTimer: UInt64 = 0

        mutating func holdInput(_ bytes: UnsafeRawBufferPointer) {
            heldInput.append(contentsOf: bytes)
        }

        mutating func updateStall() {
            isStalled = !stalled.isEmpty
        }
    }

    /// How a trickled response goes out: `allowance` bytes may go now; each tick of the pace grants one chunk.
    final class Pacing {
        let bytesPerChunk: Int
        let interval: UInt64
        var allowance = 0
        /// The first interval has passed (an empty body ends then).
        var hasTicked = false
        /// The last chunk (END_STREAM) has been taken.
        var isFinished = false

        init(bytesPerChunk: Int, interval: UInt64) {
            self.bytesPerChunk = max(1, bytesPerChunk)
            self.interval = interval
        }
    }

    /// Carries out `fault` for `response` on `stream` (from ``submit(_:on:)``, never inside nghttp2's calls).
    func carryOut(_ fault: ConnectionFault, _ response: HTTPResponse, on stream: Stream) {
        guard let session else { return }
        pipeline.logger.debug(
            "connection fault", [("conn.id", "\(info.id)"), ("h2.stream_id", "\(stream.id)"), ("fault", fault.name)])
        switch fault {
        case .goAway(let errorCode, let debugData):
            stream.awaitingResponse = false
            perform(lifecycle.faultRequestedGoAway(on: stream.id, errorCode: errorCode, debugData: debugData))
        case .resetStream(let errorCode):
            stream.awaitingResponse = false
            guard !stream.isResetting else { return }
            stream.isResetting = true
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, errorCode)
        case .close:
            connection.close()
        case .stall(let nanoseconds):
            stall(response.withoutFault, on: stream, for: nanoseconds)
        case .trickle(let bytesPerChunk, let interval):
            let pacing = Pacing(bytesPerChunk: bytesPerChunk, interval: interval)
            stream.pacing = pacing
            submitFrames(session, response.withoutFault, on: stream, isPaced: true)
            schedulePace(of: stream.id, after: interval)
        case .limitConcurrentStreams(let limit, let duration):
            submitFrames(session, response.withoutFault, on: stream)
            // The response first: nghttp2 sends SETTINGS before HEADERS it has queued.
            guard writeQueuedFrames() else { return }
            cutStreamLimit(to: limit, for: duration)
        }
    }

    /// Ends what faults hold when the connection closes: their timers are cancelled, held responses dropped.
    func endFaults() {
        for timer in faults.timers.values { connection.loop.cancel(timer) }
        faults = FaultState()
    }

    /// Runs `body` on the loop after `nanoseconds`, unless the connection has closed by then.
    /// - Returns: the timer's key in ``FaultState/timers``.
    @discardableResult
    func scheduleFaultTimer(after nanoseconds: UInt64, _ body: @escaping (HTTP2ConnectionHandler) -> Void) -> UInt64 {
        let key = faults.nextTimer
        faults.nextTimer += 1
        let bound = LoopBound(selfSlot ?? HandlerSlot(self), loop: connection.loop)
        faults.timers[key] = connection.loop.schedule(afterNanoseconds: nanoseconds) {
            bound.value.handler?.reentering { handler in
                handler.faults.timers[key] = nil
                body(handler)
            }
        }
        return key
    }

    // MARK: Stall

    /// Stops reading: bytes already received wait, no request starts, the peer's PINGs go unanswered. After
    /// `nanoseconds` (if any) `response` goes out and, once no other stall holds the connection, reading resumes.
    private func stall(_ response: HTTPResponse, on stream: Stream, for nanoseconds: UInt64?) {
        faults.stalled[stream.id] = response
        faults.updateStall()
        connection.setReadingPaused(true)
        guard let nanoseconds else { return }
        let streamID = stream.id
        scheduleFaultTimer(after: nanoseconds) { handler in handler.endStall(of: streamID) }
    }

    private func endStall(of streamID: Int32) {
        guard let response = faults.stalled.removeValue(forKey: streamID) else { return }
        faults.updateStall()
        if let stream = streams[streamID], stream.awaitingResponse { submit(response, on: stream) }
        guard !faults.isStalled else { return send() }
        connection.setReadingPaused(false)
        let held = faults.heldInput
        faults.heldInput = []
        if held.isEmpty {
            dispatchBacklog()
            send()
        } else {
            held.withUnsafeBytes { connectionDidReceive(connection, bytes: $0) }
        }
    }

    // MARK: Trickle

    /// The next chunk of a trickled body may go in `nanoseconds`.
    private func schedulePace(of streamID: Int32, after nanoseconds: UInt64) {
        scheduleFaultTimer(after: nanoseconds) { handler in
            guard let session = handler.session, let stream = handler.streams[streamID], let pacing = stream.pacing,
                  !stream.isClosed, !pacing.isFinished else { return }
            // `sendTimeout` counts from when the pace lets a chunk go (``Stream/isWaitingForPace``).
            stream.lastDataAt = handler.currentTime
            pacing.allowance = pacing.bytesPerChunk
            pacing.hasTicked = true
            nghttp2_session_resume_data(session, streamID)
            handler.send()
            if !pacing.isFinished && !stream.isClosed { handler.schedulePace(of: streamID, after: pacing.interval) }
        }
    }

    /// nghttp2's data source for a trickled body: at most the allowance (one chunk per interval), else
    /// `NGHTTP2_ERR_DEFERRED` until the pace's timer resumes the stream.
    func readPacedBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = stream(streamID), let pacing = stream.pacing else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let remaining = stream.responseBody.count - stream.responseOffset
        guard pacing.hasTicked, remaining == 0 || pacing.allowance > 0 else { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
        let n = readBody(streamID: streamID, into: buffer, length: min(length, max(pacing.allowance, 0)), flags: flags)
        guard n >= 0 else { return n }
        pacing.allowance -= n
        if flags.pointee & NGHTTP2_DATA_FLAG_EOF.rawValue != 0 { pacing.isFinished = true }
        return n
    }
}

extension HTTP2ConnectionHandler.Stream {
    /// A trickled response whose next chunk waits for the pace, not for the peer: not a response the peer stalls
    /// (`sendTimeout` does not apply meanwhile).
    var isWaitingForPace: Bool {
        guard let pacing else { return false }
        return pacing.allowance <= 0 && !pacing.isFinished
    }
}
