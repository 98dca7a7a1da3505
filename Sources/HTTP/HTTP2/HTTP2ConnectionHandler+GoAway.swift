// APNs Sandbox — HTTP/2 output: GOAWAYs and the end of a session (the session state machine's actions), the mem_send loop.
import CNGHTTP2
import Transport

extension HTTP2ConnectionHandler {
    /// Time between the shutdown notice and the final GOAWAY (about one loopback/LAN round trip
    /// plus the client's reaction time).
    static let shutdownNoticeGrace: UInt64 = 200_000_000

    /// Carries out an action of ``lifecycle``. Queues frames without sending them (the caller sends: this may
    /// run inside nghttp2's callbacks), except for the shutdown notice, a protocol error's close and a fault's
    /// GOAWAY (which never comes from inside nghttp2: responses are submitted outside its calls).
    func perform(_ action: HTTP2SessionStateMachine.Action) {
        guard let session else { return }
        switch action {
        case .none:
            break
        case .sendShutdownNotice:
            sendShutdownNotice()
        case .submitGoAway(let reason):
            submitGoAway(session, reason: reason)
        case .terminate(let violation):
            terminate(session, violation)
        case .sendAndClose:
            send()
            connection.closeAfterFlush()
        case .faultGoAway(let lastStreamID, let errorCode, let debugData):
            faultGoAway(session, lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData)
        }
    }

    /// The first GOAWAY of the two-step shutdown, and the timer for the second.
    ///
    /// Both carry `{"reason":"Shutdown"}`: clients built on Python's `h2` (aioapns, httpx) stop at the
    /// first GOAWAY and only ever see the notice; Go's transport reports the last one's debug data; Pushy
    /// logs each. The notice is written here (``HTTP2GoAwayFrame``), since nghttp2's takes no debug data.
    private func sendShutdownNotice() {
        for stream in streams.values { stream.bodyWriter?.finish() }
        send()  // what nghttp2 has queued goes first: the notice lands between two whole frames
        guard !connection.isClosed else { return }
        let reason = GoAwayReason.shutdown
        connection.write(HTTP2GoAwayFrame.encode(
            lastStreamID: Int32.max, errorCode: reason.errorCode, debugData: reason.debugData))
        connection.flush()
        let bound = LoopBound(selfSlot ?? HandlerSlot(self), loop: connection.loop)
        connection.loop.schedule(afterNanoseconds: Self.shutdownNoticeGrace) {
            bound.value.handler?.reentering { handler in
                let action = handler.lifecycle.shutdownGraceElapsed()
                guard action != .none else { return }
                handler.perform(action)
                handler.send()
            }
        }
    }

    /// Queues GOAWAY naming the last stream processed, with `reason`'s code and debug data (nghttp2 copies it).
    private func submitGoAway(_ session: OpaquePointer, reason: GoAwayReason) {
        let debugData = reason.debugData
        debugData.withUnsafeBufferPointer { data in
            _ = nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                reason.errorCode, data.baseAddress, data.count)
        }
    }

    /// Writes GOAWAY ENHANCE_YOUR_CALM for `violation`, with its ``GoAwayReason`` as debug data: nothing more is
    /// read, started or sent, every stream's work is cancelled and its response dropped; the connection
    /// closes once the GOAWAY is out. May run inside nghttp2's callbacks: the frame is only queued here, and
    /// ``send()`` starts the close.
    private func terminate(_ session: OpaquePointer, _ violation: ConnectionGuard.Violation) {
        let reason = GoAwayReason(violation)
        pipeline.logger.info(
            "HTTP/2 connection ended: \(violation.rawValue)",
            [("conn.id", "\(info.id)"), ("client", info.clientAddress), ("reason", reason.rawValue)])
        // nghttp2 ignores the rest of the input from here; the GOAWAY it queues is never sent (send() writes
        // nothing more once terminated): this one, written in its place, carries the reason.
        let lastStreamID = nghttp2_session_get_last_proc_stream_id(session)
        nghttp2_session_terminate_session(session, reason.errorCode)
        connection.write(HTTP2GoAwayFrame.encode(
            lastStreamID: lastStreamID, errorCode: reason.errorCode, debugData: reason.debugData))
        dropAllWork()
    }

    /// A fault's GOAWAY (``ConnectionFault/goAway(errorCode:debugData:)``): what nghttp2 has queued goes out first
    /// (so this GOAWAY lands between two whole frames), then the GOAWAY, written here because nghttp2 1.52's
    /// `terminate_session` takes no debug data; nghttp2 is told the session is over, so its own GOAWAY is never
    /// sent (``send()`` writes nothing more once terminated). The work of every stream is dropped, as after a
    /// violation, and the connection closes once the frame is out.
    private func faultGoAway(_ session: OpaquePointer, lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        guard writeFrames(session) else { return }
        nghttp2_session_terminate_session2(session, lastStreamID, errorCode)
        connection.write(HTTP2GoAwayFrame.encode(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData))
        dropAllWork()
        connection.closeAfterFlush()
    }

    /// Nothing more is started or sent for any stream: queued work is forgotten, responses dropped, work in
    /// flight cancelled.
    private func dropAllWork() {
        _ = backlog.removeAll()
        _ = blockingJobs.removeAll()
        for stream in streams.values {
            heldResponseBytes -= stream.responseBody.count - stream.responseOffset
            stream.responseBody = []
            stream.responseOffset = 0
            end(stream)
        }
    }

    // MARK: Sending

    /// Moves everything nghttp2 wants to send into the connection and flushes it, starts waiting
    /// requests when the output allows, and closes the connection once nghttp2 is done with it (after
    /// GOAWAY and the last stream).
    func send() {
        // (`isClosed` first: after the close `connection` may be gone.)
        guard let session, !lifecycle.isClosed, !connection.isClosed else { return }
        if lifecycle.isTerminated {
            // Our GOAWAY is the last frame (see terminate(_:_:)).
            connection.closeAfterFlush()
            return
        }
        guard writeFrames(session) else { return }
        if !(backlog.isEmpty && blockingJobs.isEmpty) && connectionGuard.mayStartRequest(heldBytes: heldOutputBytes) {
            startBlockingJobs()
            dispatchBacklog()
            // A response's fault may have ended the session meanwhile (a GOAWAY, a close).
            guard !lifecycle.isClosed, !lifecycle.isTerminated else { return }
            guard writeFrames(session) else { return }
        }
        if lifecycle.shouldClose(
            sessionWantsRead: nghttp2_session_want_read(session) != 0,
            sessionWantsWrite: nghttp2_session_want_write(session) != 0, openStreams: streams.count)
        {
            connection.closeAfterFlush()
        }
    }

    /// Moves what nghttp2 has queued into the connection (and flushes), without starting requests or closing;
    /// false when the connection was closed.
    func writeQueuedFrames() -> Bool {
        guard let session, !lifecycle.isClosed, !lifecycle.isTerminated, !connection.isClosed else { return false }
        return writeFrames(session)
    }

    /// The mem_send loop; false when the connection was closed.
    private func writeFrames(_ session: OpaquePointer) -> Bool {
        var data: UnsafePointer<UInt8>?
        var isHoldingBack: Bool
        repeat {
            isHoldingBack = false
            while true {
                guard connection.pendingOutputBytes < (1 << 20) else {
                    isHoldingBack = true
                    break
                }
                let n = nghttp2_session_mem_send(session, &data)
                if n < 0 {
                    connection.close()
                    return false
                }
                if n > 0, let data {
                    let chunk = UnsafeRawBufferPointer(start: data, count: n)
                    if let patched = settingsRewriter.rewrite(chunk) {
                        patched.withUnsafeBytes { connection.write($0) }
                    } else {
                        connection.write(chunk)
                    }
                    continue
                }
                // Everything queued before is out (the last DATA of those responses included).
                guard submitResetsAfterResponse(session) else { break }
            }
            connection.flush()
            // nghttp2 may still have frames (a streaming body): send them once the socket has taken
            // these — or at once if it already has.
        } while isHoldingBack && nghttp2_session_want_write(session) != 0 && !connection.notifyWhenDrained()
        return !connection.isClosed
    }

    /// RST_STREAM NO_ERROR for streams answered before their request ended; false if there were none.
    private func submitResetsAfterResponse(_ session: OpaquePointer) -> Bool {
        guard !resetsAfterResponse.isEmpty else { return false }
        let ids = resetsAfterResponse
        resetsAfterResponse.removeAll()
        for id in ids {
            guard let stream = streams[id], !stream.requestEnded, !stream.isResetting else { continue }
            stream.isResetting = true
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_NO_ERROR.rawValue)
        }
        return true
    }
}
