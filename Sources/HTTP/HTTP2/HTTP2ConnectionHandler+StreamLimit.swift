// APNs Sandbox — HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: what is advertised (the initial value, a handler's raise,
// a fault's cut) and the refusal of streams over it.
import CNGHTTP2
import Transport

extension HTTP2ConnectionHandler {
    /// Sets SETTINGS_MAX_CONCURRENT_STREAMS in force (the initial value, a handler's raise); while a cut lasts
    /// the cut is advertised and this value is restored when it ends. A raise while streams are open waits until
    /// one of them closes (``applyPendingStreamLimitRaise()``): the SETTINGS then follows the response of the push that
    /// earned it (APNs' raise after the first valid token), which clients that count their streams from the
    /// SETTINGS they have seen (aioapns) take as it is meant. A lower limit applies at once.
    func setStreamLimit(_ limit: UInt32) {
        if limit > faults.streamLimit && !streams.isEmpty && faults.streamLimit > 0 {
            pendingStreamLimitRaise = max(limit, pendingStreamLimitRaise ?? 0)
            return
        }
        pendingStreamLimitRaise = nil
        faults.streamLimit = limit
        advertiseStreamLimit()
    }

    /// The raise ``setStreamLimit(_:)`` held, now that a stream has closed (from `streamClosed`, which nghttp2 calls
    /// inside `mem_send` once the last frame of the response is out: the SETTINGS is submitted for the same loop).
    func applyPendingStreamLimitRaise() {
        guard let raise = pendingStreamLimitRaise else { return }
        pendingStreamLimitRaise = nil
        faults.streamLimit = raise
        advertiseStreamLimit()
    }

    private func advertiseStreamLimit() {
        submitSettings(maxConcurrentStreams: min(faults.streamLimit, faults.cut?.limit ?? .max))
    }

    /// Cuts SETTINGS_MAX_CONCURRENT_STREAMS to `limit` for `duration` (never above the limit in force); a cut
    /// during a cut takes the new limit and ends at the later of the two ends.
    func cutStreamLimit(to limit: UInt32, for duration: UInt64) {
        let now = currentTime
        var until = now &+ duration
        if let cut = faults.cut {
            until = max(until, cut.until)
            if let timer = faults.timers.removeValue(forKey: cut.timer) { connection.loop.cancel(timer) }
        }
        let timer = scheduleFaultTimer(after: until &- now) { handler in
            handler.faults.cut = nil
            handler.advertiseStreamLimit()
            handler.send()
        }
        faults.cut = (limit, until, timer)
        advertiseStreamLimit()
    }

    // MARK: Refusing streams

    /// Whether a new stream is over SETTINGS_MAX_CONCURRENT_STREAMS as last advertised (acknowledged or not):
    /// then it is refused with RST_STREAM REFUSED_STREAM (RFC 9113 §5.1.2), never with a connection error.
    /// The open streams counted are the ones not closed on this side; the peer sees each closed earlier (when
    /// the END_STREAM or RST_STREAM arrives), so it is never refused for a stream it can still count as open.
    func refusesNewStream(_ streamID: Int32) -> Bool {
        guard streams.count >= Int(advertisedMaxConcurrentStreams), let session else { return false }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_REFUSED_STREAM.rawValue)
        logRefusal(streamID)
        return true
    }

    /// The first refusal of a connection is explained at debug level with the limit in force and why; the
    /// others are only counted (logged when the connection closes).
    private func logRefusal(_ streamID: Int32) {
        refusedStreams += 1
        guard refusedStreams == 1 else { return }
        let limit = advertisedMaxConcurrentStreams
        var metadata = [
            ("conn.id", "\(info.id)"), ("client", info.clientAddress), ("h2.stream_id", "\(streamID)"),
            ("h2.stream_limit", "\(limit)"),
        ]
        if limit < pipeline.options.maxConcurrentStreams, let why = pipeline.options.initialStreamLimitExplanation {
            metadata.append(("why", why))
        }
        pipeline.logger.debug(
            "HTTP/2 stream refused with RST_STREAM REFUSED_STREAM: the client opened more streams than "
                + "SETTINGS_MAX_CONCURRENT_STREAMS allows (further refusals on this connection are counted)",
            metadata)
    }
}
