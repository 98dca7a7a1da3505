// APNs Sandbox — HTTP/2 over libnghttp2, driven by mem_recv/mem_send.
import CLibShims
import CNGHTTP2
import Glibc
import Support
import Transport

/// One HTTP/2 server connection. nghttp2 does framing, HPACK and flow control; it never sees
/// the socket: bytes go in with `nghttp2_session_mem_recv` and come out of
/// `nghttp2_session_mem_send` into the `Connection`'s output buffer.
///
/// A response without a body is submitted without a data provider, so it goes out as a single
/// HEADERS frame with END_STREAM (no DATA frame).
///
/// ### What a peer can make the connection hold
/// - Requests: complete requests wait in a backlog and are started in order while fewer than
///   `maxOutputBytesPerConnection` response bytes wait for the peer (bodies without flow-control window
///   included), so a peer that reads nothing stops the work. A stream reset before its request started
///   never starts; one reset while its handler works cancels ``HTTPRequest/cancellation``.
/// - Request bodies: the connection's flow-control window is `maxRequestBodyBytesPerConnection`, and
///   bytes go back to it only when a handler takes the body (nghttp2's automatic window updates are
///   off), so buffered bodies stay within it. A body over `maxBodyBytes` is answered at once (413) and
///   its stream's window is no longer opened; after the complete response the stream is reset with
///   NO_ERROR (RFC 9113 §8.1). DATA that still arrives for closed streams (which nghttp2 drops silently)
///   is counted from the frame headers (``HTTP2FrameScanner``).
/// - Abuse (``ConnectionGuard``): too many RST_STREAMs from the peer (rapid reset), too much DATA on closed
///   streams, a header block decoding far past the header-list limit (an HPACK bomb), or too many header-block
///   bytes that nghttp2 decodes with no callback (blocks for closed, refused or reset streams, the rest of a
///   block after an invalid field) ends the connection with GOAWAY ENHANCE_YOUR_CALM.
/// - Time: a request not complete within `requestTimeout` and a response that has not moved for
///   `sendTimeout` are reset; a connection without request activity (PINGs do not count) for
///   `idleTimeout` gets GOAWAY.
/// - Streams over SETTINGS_MAX_CONCURRENT_STREAMS (APNs: one until a valid provider token) are refused with
///   RST_STREAM REFUSED_STREAM, each on its own (RFC 9113 §5.1.2; the request was not processed, and clients
///   such as Pushy and Go's transport retry it), whether or not the peer has acknowledged the limit; the
///   connection stays up. The handler refuses them itself against the limit it advertised last: nghttp2 never
///   learns the limit (``HTTP2StreamLimitSetting``), since it would end the connection for a stream over an
///   acknowledged one. A raise while streams are open waits for one to close, so it reaches the peer after the
///   response that earned it. The first refusal on a connection is explained at debug level, the count when it closes.
///
/// Every GOAWAY the server decides on carries Apple's debug data, `{"reason":"…"}` (``GoAwayReason``):
/// `IdleTimeout`, `Shutdown` (notice and final GOAWAY), and the ENHANCE_YOUR_CALM reasons. Which GOAWAY goes
/// out when, and when the connection closes, is decided by an ``HTTP2SessionStateMachine``
/// (`HTTP2ConnectionHandler+GoAway.swift` carries out its actions). A response's ``ConnectionFault`` is carried
/// out in `HTTP2ConnectionHandler+Faults.swift` (its GOAWAY through the state machine too).
///
/// Threading: confined to the connection's loop. nghttp2 callbacks are non-capturing
/// trampolines that recover `self` from `user_data` (unretained: `self` owns the session).
final class HTTP2ConnectionHandler: ConnectionHandler {
    /// A blocking handler's work, waiting to start.
    struct BlockingJob {
        let stream: Stream
        let request: HTTPRequest
        let job: @Sendable () throws -> HTTPResponse
    }

    /// Per-stream request assembly and response state.
    final class Stream {
        let id: Int32
        var method = ""
        var path = ""
        var scheme = ""
        var authority: String?
        var headers = HTTPFields()
        var body: [UInt8] = []
        /// Body bytes not yet given back to the connection's flow-control window.
        var unconsumedBytes = 0
        var headerBytes = 0
        var isHeaderListTooLarge = false
        var isBodyTooLarge = false
        var hasBadHeader = false
        /// nghttp2 found an invalid field in this stream's header block and decodes the rest without callbacks.
        var headersIgnored = false
        /// END_STREAM arrived from the peer.
        var requestEnded = false
        /// In the backlog, or given to a handler.
        var isQueued = false
        /// nghttp2 closed the stream (sent or reset).
        var isClosed = false
        /// A RST_STREAM of ours is queued.
        var isResetting = false
        var awaitingResponse = false
        var cancellation: RequestCancellation?
        var responseBody: [UInt8] = []
        var responseOffset = 0
        /// The body of a streaming response, read as it is written.
        var bodyWriter: HTTPBodyWriter?
        /// A trickled response's pace (``ConnectionFault/trickle(bytesPerChunk:intervalNanoseconds:)``).
        var pacing: Pacing?
        /// When the response last moved: submitted, or a DATA frame taken (monotonic ns).
        var lastDataAt: UInt64 = 0
        let startedAt: UInt64

        init(id: Int32, startedAt: UInt64) {
            self.id = id
            self.startedAt = startedAt
        }

        /// Response bytes waiting to go out (in this stream, or in its streaming writer).
        var hasPendingResponse: Bool {
            responseOffset < responseBody.count || (bodyWriter?.pendingByteCount ?? 0) > 0
        }
    }

    unowned let connection: any ConnectionContext
    let pipeline: HTTPPipeline
    var session: OpaquePointer?
    var streams: [Int32: Stream] = [:]
    /// Complete requests not started yet, oldest first.
    var backlog = FIFOQueue<Stream>()
    /// Blocking handlers (``HandlerResult/blocking(_:)``) waiting for a worker slot, oldest first.
    var blockingJobs = FIFOQueue<BlockingJob>()
    /// Blocking handlers of this connection running (or queued in the pool) now.
    var blockingInFlight = 0
    var connectionGuard: ConnectionGuard
    private var scanner = HTTP2FrameScanner()
    /// GOAWAY and closing (``HTTP2SessionStateMachine``).
    var lifecycle = HTTP2SessionStateMachine()
    /// Connection faults in progress: stalls, a stream-limit cut, their timers (`+Faults.swift`).
    var faults = FaultState()
    /// Response body bytes submitted and not yet taken by nghttp2 (e.g. waiting for window).
    var heldResponseBytes = 0
    /// Request-body bytes received and not yet given back to the connection window.
    var bufferedRequestBytes = 0
    /// Streams whose complete response went out while their request was still open: reset with
    /// NO_ERROR once nghttp2 has sent everything before (RFC 9113 §8.1).
    var resetsAfterResponse: [Int32] = []
    /// The time of the read being processed (for callbacks).
    var now: UInt64
    /// Inside ``connectionDidReceive(_:bytes:)`` (parsing, dispatching, sending): `now` is current.
    private var isInReadCycle = false
    private(set) var selfSlot: HandlerSlot?
    /// SETTINGS_MAX_CONCURRENT_STREAMS last submitted: the limit new streams are refused against.
    private(set) var advertisedMaxConcurrentStreams: UInt32 = .max
    /// A raise of the limit held until a stream closes (``setStreamLimit(_:)``).
    var pendingStreamLimitRaise: UInt32?
    /// Streams refused (REFUSED_STREAM) for going over SETTINGS_MAX_CONCURRENT_STREAMS.
    var refusedStreams = 0
    /// Bytes decoded so far of the header block being received (name + value + 32 per field, as RFC 9113 counts).
    var decodedHeaderBlockBytes = 0
    /// The stream of the header block being received.
    var headerBlockStreamID: Int32 = 0
    /// Gives SETTINGS_MAX_CONCURRENT_STREAMS its id in nghttp2's output (``HTTP2StreamLimitSetting``).
    var settingsRewriter = HTTP2SettingsRewriter()
    var nvStorage: [UInt8] = []
    var nvRanges: [NameValueRange] = []
    let info: ConnectionInfo

    /// - Parameter info: the connection's facts and session state when it was HTTP/1.1 before (an h2c upgrade
    ///   keeps what handlers bound to it); nil for a connection that starts as HTTP/2.
    init(connection: any ConnectionContext, pipeline: HTTPPipeline, info inherited: ConnectionInfo? = nil) {
        self.connection = connection
        self.pipeline = pipeline
        let now = MonotonicClock.nanoseconds()
        self.now = now
        self.connectionGuard = ConnectionGuard(configuration: pipeline.options.guardConfiguration, now: now)
        self.info = inherited ?? ConnectionInfo(connection: connection)
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        // Called only for frames nghttp2 rejects (protocol errors): never on the hot path.
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks, onInvalidFrame)
        // Called only for errors: tells a header block that nghttp2 goes on decoding without callbacks.
        nghttp2_session_callbacks_set_error_callback2(callbacks, onSessionError)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        // At most 32 entries in one SETTINGS frame of the peer.
        nghttp2_option_set_max_settings(option, 32)
        // nghttp2 never learns SETTINGS_MAX_CONCURRENT_STREAMS (HTTP2StreamLimitSetting), and a server session keeps
        // that many closed streams for RFC 7540's priority tree: without this, every stream of the connection.
        nghttp2_option_set_no_closed_streams(option, 1)
        // Window updates follow what handlers have taken (see dataChunk and releaseRequestBody).
        nghttp2_option_set_no_auto_window_update(option, 1)
        // Our own reset limit answers ENHANCE_YOUR_CALM; keep the library's (where it has one) looser.
        let options = pipeline.options
        _ = CLibShims_nghttp2_option_set_stream_reset_rate_limit(
            option, UInt64(max(1000, options.streamResetBurst * 2)), UInt64(max(33, options.streamResetsPerSecond * 2)))
        var created: OpaquePointer?
        let rc = nghttp2_session_server_new2(&created, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        guard rc == 0, let created else {
            connection.close()
            return
        }
        session = created
        let initialStreams = options.initialMaxConcurrentStreams?(info) ?? options.maxConcurrentStreams
        setStreamLimit(initialStreams)
        // Not a weak reference: weak references give the handler a side table, which makes every
        // retain/release of it (one per nghttp2 callback) take the slow path. The slot breaks the
        // cycle handler → info → session → control → handler when the connection closes.
        let slot = HandlerSlot(self)
        selfSlot = slot
        let bound = LoopBound(slot, loop: connection.loop)
        info.session.installStreamLimitControl { limit in
            bound.loop.execute {
                bound.value.handler?.reentering { handler in
                    // Never above the configured limit, whatever a handler asks for.
                    handler.setStreamLimit(min(limit, handler.pipeline.options.maxConcurrentStreams))
                    handler.send()
                }
            }
        }
        // A larger connection window than the 64 KiB default, so uploads are not throttled; it is also
        // the bound on request-body bytes buffered for this connection.
        let window = Int32(clamping: max(65_535, options.maxRequestBodyBytesPerConnection))
        nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, window)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS (APNs lowers it to 1 until a valid
    /// provider token arrives). Callers go through ``setStreamLimit(_:)``, which minds a fault's cut.
    func submitSettings(maxConcurrentStreams: UInt32) {
        guard let session, maxConcurrentStreams != advertisedMaxConcurrentStreams else { return }
        // Under the placeholder id: nghttp2 must not enforce it (see HTTP2StreamLimitSetting); writeFrames gives it
        // SETTINGS_MAX_CONCURRENT_STREAMS' id on the wire.
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(HTTP2StreamLimitSetting.placeholderID), value: maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(pipeline.options.maxHeaderListSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        // Recorded only once queued: it is the limit new streams are refused against.
        guard nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0 else { return }
        advertisedMaxConcurrentStreams = maxConcurrentStreams
    }

    /// The time now: the read's while one is processed (no clock read per request on the hot path).
    var currentTime: UInt64 { isInReadCycle ? now : MonotonicClock.nanoseconds() }

    /// Response bytes held for the peer: bodies nghttp2 has not taken plus the socket's backlog.
    var heldOutputBytes: Int { heldResponseBytes + connection.pendingOutputBytes }

    // MARK: ConnectionHandler

    // (Nothing here calls `send()` from inside `nghttp2_session_mem_recv`: its callbacks only record, and work
    // that finishes later comes back through `loop.execute`.)
    func connectionDidReceive(_ connection: any ConnectionContext, bytes: UnsafeRawBufferPointer) {
        guard let session, bytes.count > 0, lifecycle.isRunning else { return }
        // A stall (``ConnectionFault/stall(nanoseconds:)``) paused reading; bytes of the same socket read (TLS
        // records decrypted together) wait for its end.
        if faults.isStalled { return faults.holdInput(bytes) }
        now = MonotonicClock.nanoseconds()
        isInReadCycle = true
        defer { isInReadCycle = false }
        let consumed = nghttp2_session_mem_recv(session, bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count)
        if consumed < 0 && lifecycle.isTerminated {
            // A violation found inside a callback (an HPACK bomb) stopped nghttp2; its GOAWAY is queued.
            send()
            return
        }
        if consumed < 0 {
            pipeline.logger.debug(
                "HTTP/2 protocol error from the peer; GOAWAY sent",
                [("conn.id", "\(info.id)"), ("client", info.clientAddress),
                 ("error", String(cString: nghttp2_strerror(Int32(truncatingIfNeeded: consumed))))])
            perform(lifecycle.protocolError())
            return
        }
        if !lifecycle.isTerminated { countDiscardedData(in: bytes) }
        dispatchBacklog()
        send()
    }

    /// DATA for streams that are not open (nghttp2 dropped it without a callback) drains the guard's
    /// allowance. Checked after mem_recv, so a stream opened by these bytes is open.
    private func countDiscardedData(in bytes: UnsafeRawBufferPointer) {
        var discarded = 0
        let session = self.session
        var ignoredHeaders = 0
        scanner.scan(bytes) { type, streamID, length in
            if type == HTTP2FrameScanner.dataType {
                if streamID != 0 && nghttp2_session_get_stream_user_data(session, streamID) == nil { discarded += length }
            } else if let stream = self.stream(streamID), !stream.headersIgnored {
                // A block the callbacks saw (countDecodedHeaderField bounds it).
            } else {
                // HEADERS or CONTINUATION of no stream of ours (closed, refused, reset) or of a block nghttp2 went on
                // decoding after an invalid field: decoded with no callback that could stop it.
                ignoredHeaders += length
            }
        }
        if discarded > 0, case .goAway(let violation) = connectionGuard.discardedData(discarded, now: now) {
            perform(lifecycle.violated(violation))
            send()
        }
        if ignoredHeaders > 0, case .goAway(let violation) = connectionGuard.ignoredHeaderBlock(ignoredHeaders, now: now) {
            perform(lifecycle.violated(violation))
            send()
        }
    }

    /// The most a header block may decode to before the peer is sent away (``ConnectionGuard/headerBlockTooLarge()``):
    /// four times SETTINGS_MAX_HEADER_LIST_SIZE, at least 64 KiB. Below it a list over the limit is answered
    /// (431, or the provider endpoint's 413); past it the decoding is stopped, so one block costs microseconds of
    /// CPU however far its dynamic-table references would expand (HPACK bomb: ~7 ms per 16 KiB block otherwise).
    var maxDecodedHeaderBlockBytes: Int { max(64 << 10, pipeline.options.maxHeaderListSize &* 4) }

    /// Counts a decoded header field of the current block; false (after queuing GOAWAY ENHANCE_YOUR_CALM) when
    /// the block is past ``maxDecodedHeaderBlockBytes``.
    func countDecodedHeaderField(_ length: Int) -> Bool {
        decodedHeaderBlockBytes += length + 32
        guard decodedHeaderBlockBytes > maxDecodedHeaderBlockBytes else { return true }
        if case .goAway(let violation) = connectionGuard.headerBlockTooLarge() {
            perform(lifecycle.violated(violation))
        }
        return false
    }

    func connectionDidDrainOutput(_ connection: any ConnectionContext) {
        send()
    }

    func connectionTick(_ connection: any ConnectionContext, now: UInt64) {
        guard let session, lifecycle.isRunning else { return }
        let options = pipeline.options
        var resets = 0
        for stream in streams.values where !stream.isResetting {
            // A request still arriving after the timeout (slowloris, or an upload answered early with 413
            // that keeps going); a response the peer has taken nothing of (no window) for too long.
            let isStalledRequest = !stream.requestEnded && now &- stream.startedAt > options.requestTimeout
            let isStalledResponse = stream.hasPendingResponse && !stream.isWaitingForPace
                && now &- max(stream.lastDataAt, stream.startedAt) > options.sendTimeout
            guard isStalledRequest || isStalledResponse else { continue }
            stream.isResetting = true
            resets += 1
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
        }
        if connectionGuard.isIdle(now: now, openRequests: streams.count) {
            perform(lifecycle.idleTimedOut())
        }
        if resets > 0 || lifecycle.isGoingAway { send() }
    }

    /// Two-step GOAWAY (RFC 9113 §6.8, ``HTTP2SessionStateMachine``): the shutdown notice now, the final
    /// GOAWAY after ``shutdownNoticeGrace``. Clients see no refused streams they had already sent.
    func connectionBeginGracefulShutdown(_ connection: any ConnectionContext) {
        guard session != nil else { return }
        perform(lifecycle.shutdownRequested())
    }

    func connectionDidClose(_ connection: any ConnectionContext) {
        lifecycle.connectionClosed()
        endFaults()
        if refusedStreams > 0 {
            pipeline.logger.debug(
                "HTTP/2 connection closed; streams it had refused with RST_STREAM REFUSED_STREAM",
                [("conn.id", "\(info.id)"), ("client", info.clientAddress), ("refused", "\(refusedStreams)")])
        }
        selfSlot?.handler = nil
        let open = Array(streams.values)
        streams.removeAll()
        _ = backlog.removeAll()
        _ = blockingJobs.removeAll()
        heldResponseBytes = 0
        bufferedRequestBytes = 0
        for stream in open { end(stream) }
    }

    /// A frame nghttp2 rejected (`on_invalid_frame_recv`): a protocol error (nghttp2 answers RST_STREAM or
    /// GOAWAY itself), logged at debug level. (nghttp2 refuses no stream itself: it does not know the limit.)
    func invalidFrame(type: UInt8, streamID: Int32, libErrorCode: Int32) {
        pipeline.logger.debug(
            "HTTP/2 frame rejected",
            [("conn.id", "\(info.id)"), ("client", info.clientAddress), ("h2.frame_type", "\(type)"),
             ("h2.stream_id", "\(streamID)"), ("error", String(cString: nghttp2_strerror(libErrorCode)))])
    }

    /// Runs `body` for work that comes back to the connection from outside an I/O event (a handler
    /// finishing later, a streaming body waking it, a timer): nothing once the connection has closed,
    /// and the connection is kept alive through `body` (a write error can close it midway; it would
    /// otherwise be freed under the code still using it).
    func reentering(_ body: (HTTP2ConnectionHandler) -> Void) {
        guard !lifecycle.isClosed else { return }
        withExtendedLifetime(connection) { body(self) }
    }

    /// Ends a stream the peer will never be answered on: its writer closes, waiting work is cancelled.
    func end(_ stream: Stream) {
        stream.isClosed = true
        let wasWaiting = stream.awaitingResponse || stream.bodyWriter != nil
        stream.awaitingResponse = false
        stream.bodyWriter?.close()
        if wasWaiting { stream.cancellation?.cancel() }
    }
}
