// APNs Sandbox — HTTP/1.1 connection faults (the sandbox's fault injection): close without an answer, stall,
// trickle.
import Support
import Transport

extension HTTP1ConnectionHandler {
    /// The connection's faults in progress. Loop-confined, like the handler.
    struct FaultState {
        /// Stalls holding the connection: no request is parsed or started and reading is paused meanwhile.
        var stalls = 0
        /// The loop timers of these faults, cancelled when the connection closes.
        var timers: [UInt64: TimerHandle] = [:]
        var nextTimer: UInt64 = 0
    }

    /// Carries out `fault` for `response`, the answer of `exchange` at the head of the queue (every answer before
    /// it is written), from ``writeReadyResponses()``.
    /// - Returns: true when the queue goes on (the response is now plain and ready), false when it stops here.
    func carryOut(_ fault: ConnectionFault, _ response: HTTPResponse, of exchange: Exchange) -> Bool {
        pipeline.logger.debug("connection fault", [("conn.id", "\(info.id)"), ("fault", fault.name)])
        switch fault {
        case .goAway, .resetStream:
            // No GOAWAY or RST_STREAM in HTTP/1.1: the connection ends without this answer, after the ones before.
            closeWithoutAnswer()
            return false
        case .close:
            // (Acted on when the response was set, at once; here for completeness.)
            connection.close()
            return false
        case .stall(let nanoseconds):
            stall(response.withoutFault, of: exchange, for: nanoseconds)
            return false
        case .trickle(let bytesPerChunk, let interval):
            trickle(response.withoutFault, of: exchange, bytesPerChunk: max(1, bytesPerChunk), interval: interval)
            return false
        case .limitConcurrentStreams:
            // Nothing to cut on HTTP/1.1: the response goes out normally.
            exchange.response = response.withoutFault
            return true
        }
    }

    /// Ends what faults hold when the connection closes: their timers are cancelled.
    func endFaults() {
        for timer in faults.timers.values { connection.loop.cancel(timer) }
        faults = FaultState()
    }

    /// Runs `body` on the loop after `nanoseconds`, unless the connection has closed (or gone to HTTP/2) by then.
    private func scheduleFaultTimer(after nanoseconds: UInt64, _ body: @escaping (HTTP1ConnectionHandler) -> Void) {
        let key = faults.nextTimer
        faults.nextTimer += 1
        let bound = LoopBound(self, loop: connection.loop)
        faults.timers[key] = connection.loop.schedule(afterNanoseconds: nanoseconds) {
            bound.value.reentering { handler in
                handler.faults.timers[key] = nil
                body(handler)
            }
        }
    }

    /// The connection closes after the answers already written, dropping every request still queued.
    private func closeWithoutAnswer() {
        lifecycle.lastRequestRead()
        let dropped = queue
        queue.removeAll()
        queuedResponseBytes = 0
        for exchange in dropped {
            exchange.bodyWriter?.close()
            exchange.request.cancellation.cancel()
        }
        flushOutput()
        connection.closeAfterFlush()
    }

    /// Holds `response` and stops reading (nothing more is parsed, later requests wait); after `nanoseconds` (if
    /// any) the response goes out and reading resumes once no other stall holds the connection.
    private func stall(_ response: HTTPResponse, of exchange: Exchange, for nanoseconds: UInt64?) {
        exchange.response = nil  // not ready: the queue waits behind it
        faults.stalls += 1
        updateReading()
        guard let nanoseconds else { return }
        scheduleFaultTimer(after: nanoseconds) { handler in
            handler.faults.stalls -= 1
            if handler.queue.contains(where: { $0 === exchange }) { exchange.response = response }
            handler.writeReadyResponses()
            handler.parse()
        }
    }

    /// Writes the head now, then the body `bytesPerChunk` bytes every `interval`; the exchange ends with the last
    /// chunk (an empty body: after one interval), and later answers wait behind it.
    private func trickle(_ response: HTTPResponse, of exchange: Exchange, bytesPerChunk: Int, interval: UInt64) {
        exchange.response = nil  // not ready: the queue waits behind it
        var bytes: [UInt8] = []
        let bodyCount = HTTP1ResponseWriter.write(
            response, version: exchange.request.version, keepAlive: exchange.keepAlive,
            isHeadRequest: exchange.request.method == "HEAD", into: &bytes)
        output.append(contentsOf: bytes[..<(bytes.count - bodyCount)])
        flushOutput()
        lastRequestActivity = MonotonicClock.nanoseconds()
        let body = Array(bytes[(bytes.count - bodyCount)...])
        let held = response.body.count
        func sendChunk(from offset: Int) {
            scheduleFaultTimer(after: interval) { handler in
                guard handler.queue.first === exchange else { return }
                let end = min(body.count, offset + bytesPerChunk)
                handler.output.append(contentsOf: body[offset..<end])
                handler.flushOutput()
                handler.lastRequestActivity = MonotonicClock.nanoseconds()
                guard end == body.count else { return sendChunk(from: end) }
                handler.queue.removeFirst()
                handler.queuedResponseBytes -= held
                guard exchange.keepAlive else {
                    handler.queue.removeAll()
                    handler.queuedResponseBytes = 0
                    handler.connection.closeAfterFlush()
                    return
                }
                handler.writeReadyResponses()
                handler.parse()
            }
        }
        sendChunk(from: 0)
    }
}
