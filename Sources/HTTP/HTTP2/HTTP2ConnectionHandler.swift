// APNs Sandbox — HTTP/2 over libnghttp2, driven by mem_recv/mem_send.
import CNGHTTP2
import Glibc
import Transport

/// One HTTP/2 server connection. nghttp2 does framing, HPACK and flow control; it never sees
/// the socket: bytes go in with `nghttp2_session_mem_recv` and come out of
/// `nghttp2_session_mem_send` into the `Connection`'s output buffer.
///
/// A response without a body is submitted without a data provider, so it goes out as a single
/// HEADERS frame with END_STREAM (no DATA frame).
///
/// Threading: confined to the connection's loop. nghttp2 callbacks are non-capturing
/// trampolines that recover `self` from `user_data` (unretained: `self` owns the session).
final class HTTP2ConnectionHandler: ConnectionHandler {
    /// Per-stream request assembly and response state.
    final class Stream {
        let id: Int32
        var method = ""
        var path = ""
        var scheme = ""
        var authority: String?
        var headers = HTTPFields()
        var body: [UInt8] = []
        var headerBytes = 0
        var isHeaderListTooLarge = false
        var isBodyTooLarge = false
        var hasBadHeader = false
        var requestComplete = false
        var awaitingResponse = false
        var responseBody: [UInt8] = []
        var responseOffset = 0
        /// The body of a streaming response, read as it is written.
        var bodyWriter: HTTPBodyWriter?
        /// When the streaming body last went out in a DATA frame (monotonic ns).
        var lastDataAt: UInt64 = 0
        let startedAt: UInt64

        init(id: Int32, startedAt: UInt64) {
            self.id = id
            self.startedAt = startedAt
        }
    }

    private unowned let connection: Connection
    let pipeline: HTTPPipeline
    var session: OpaquePointer?
    private var streams: [Int32: Stream] = [:]
    private var completedRequests: [Stream] = []
    private var isReceiving = false
    private var isGoingAway = false
    private var isConnectionClosed = false
    private var selfSlot: HandlerSlot?
    private var hasSentFinalGoAway = false
    private var advertisedMaxConcurrentStreams: UInt32 = .max
    var nvStorage: [UInt8] = []
    var nvRanges: [NameValueRange] = []
    private var lastActivity: UInt64
    let info: ConnectionInfo

    init(connection: Connection, pipeline: HTTPPipeline) {
        self.connection = connection
        self.pipeline = pipeline
        self.lastActivity = MonotonicClock.nanoseconds()
        self.info = ConnectionInfo(connection: connection)
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        // Enforce SETTINGS_MAX_CONCURRENT_STREAMS from the first request, before the ACK.
        nghttp2_option_set_max_settings(option, 32)
        var created: OpaquePointer?
        let rc = nghttp2_session_server_new2(&created, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        guard rc == 0, let created else {
            connection.close()
            return
        }
        session = created
        let initialStreams = pipeline.options.initialMaxConcurrentStreams?(info) ?? pipeline.options.maxConcurrentStreams
        submitSettings(maxConcurrentStreams: initialStreams)
        // Not a weak reference: weak references give the handler a side table, which makes every
        // retain/release of it (one per nghttp2 callback) take the slow path. The slot breaks the
        // cycle handler → info → session → control → handler when the connection closes.
        let slot = HandlerSlot(self)
        selfSlot = slot
        let bound = LoopBound(slot, loop: connection.loop)
        info.session.installStreamLimitControl { limit in
            bound.loop.execute {
                guard let handler = bound.value.handler, !handler.isConnectionClosed else { return }
                // Never above the configured limit, whatever a handler asks for.
                handler.submitSettings(maxConcurrentStreams: min(limit, handler.pipeline.options.maxConcurrentStreams))
                handler.send()
            }
        }
        // A larger connection window than the 64 KiB default, so uploads are not throttled.
        nghttp2_submit_window_update(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32((1 << 24) - 65_535))
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS (APNs lowers it to 1 until a valid
    /// provider token arrives).
    func submitSettings(maxConcurrentStreams: UInt32) {
        guard let session, maxConcurrentStreams != advertisedMaxConcurrentStreams else { return }
        advertisedMaxConcurrentStreams = maxConcurrentStreams
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(pipeline.options.maxHeaderListSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    // MARK: ConnectionHandler

    func connectionDidReceive(_ connection: Connection, bytes: UnsafeRawBufferPointer) {
        guard let session, bytes.count > 0 else { return }
        lastActivity = MonotonicClock.nanoseconds()
        isReceiving = true
        let consumed = nghttp2_session_mem_recv(session, bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count)
        isReceiving = false
        if consumed < 0 {
            // Protocol error: nghttp2 queued a GOAWAY; send it and close.
            send()
            connection.closeAfterFlush()
            return
        }
        dispatchCompletedRequests()
        send()
    }

    func connectionDidDrainOutput(_ connection: Connection) {
        send()
    }

    func connectionTick(_ connection: Connection, now: UInt64) {
        guard let session else { return }
        let options = pipeline.options
        var stalled: [Int32] = []
        for stream in streams.values where !stream.requestComplete && now &- stream.startedAt > options.requestTimeout {
            stalled.append(stream.id)
        }
        for id in stalled {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
            streams[id]?.requestComplete = true
        }
        // Streaming bodies whose client stopped reading (no flow-control window, or a full socket): their
        // backlog is bounded, but they would hold it forever.
        for stream in streams.values {
            guard let writer = stream.bodyWriter, writer.pendingByteCount > 0 || connection.pendingOutputBytes > 0,
                now &- max(stream.lastDataAt, stream.startedAt) > options.idleTimeout
            else { continue }
            stalled.append(stream.id)
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
        }
        if streams.isEmpty && now &- lastActivity > options.idleTimeout && !isGoingAway {
            isGoingAway = true
            hasSentFinalGoAway = true
            nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                NGHTTP2_NO_ERROR.rawValue, nil, 0)
        }
        if !stalled.isEmpty || isGoingAway { send() }
    }

    /// Two-step GOAWAY (RFC 9113 §6.8): a shutdown notice first (last stream id 2^31-1, so
    /// requests already in flight are still accepted), then after a short pause the final GOAWAY
    /// naming the last stream processed. Clients see no refused streams they had already sent.
    func connectionBeginGracefulShutdown(_ connection: Connection) {
        guard let session, !isGoingAway else { return }
        isGoingAway = true
        for stream in streams.values { stream.bodyWriter?.finish() }
        nghttp2_submit_shutdown_notice(session)
        send()
        let bound = LoopBound(selfSlot ?? HandlerSlot(self), loop: connection.loop)
        connection.loop.schedule(afterNanoseconds: Self.shutdownNoticeGrace) {
            guard let handler = bound.value.handler, !handler.isConnectionClosed, let session = handler.session else { return }
            nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                NGHTTP2_NO_ERROR.rawValue, nil, 0)
            handler.hasSentFinalGoAway = true
            handler.send()
        }
    }

    /// Time between the shutdown notice and the final GOAWAY (about one loopback/LAN round trip
    /// plus the client's reaction time).
    static let shutdownNoticeGrace: UInt64 = 200_000_000

    func connectionDidClose(_ connection: Connection) {
        isConnectionClosed = true
        selfSlot?.handler = nil
        let writers = streams.values.compactMap(\.bodyWriter)
        streams.removeAll()
        for writer in writers { writer.close() }
        completedRequests.removeAll()
    }

    // MARK: Sending

    /// Moves everything nghttp2 wants to send into the connection and flushes it; closes the
    /// connection once nghttp2 is done with it (after GOAWAY and the last stream).
    private func send() {
        guard let session, !connection.isClosed else { return }
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
                    return
                }
                guard n > 0, let data else { break }
                connection.write(UnsafeRawBufferPointer(start: data, count: n))
            }
            connection.flush()
            // nghttp2 may still have frames (a streaming body): send them once the socket has taken
            // these — or at once if it already has.
        } while isHoldingBack && nghttp2_session_want_write(session) != 0 && !connection.notifyWhenDrained()
        let wantsMore = nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0
        if !wantsMore || (hasSentFinalGoAway && streams.isEmpty && nghttp2_session_want_write(session) == 0) {
            connection.closeAfterFlush()
        }
    }

    // MARK: Requests

    private func dispatchCompletedRequests() {
        guard !completedRequests.isEmpty else { return }
        let ready = completedRequests
        completedRequests.removeAll(keepingCapacity: true)
        for stream in ready { dispatch(stream) }
    }

    private func dispatch(_ stream: Stream) {
        if stream.isHeaderListTooLarge {
            submit(.jsonError(status: 431, code: "header_list_too_large", message: "Header list exceeds \(pipeline.options.maxHeaderListSize) bytes"), on: stream)
            return
        }
        if stream.isBodyTooLarge {
            let request = makeRequest(stream)
            let response = pipeline.options.oversizedBodyResponder?(request)
                ?? .jsonError(status: 413, code: "body_too_large", message: "Body exceeds \(pipeline.options.maxBodyBytes) bytes")
            submit(response, on: stream)
            return
        }
        if stream.hasBadHeader || stream.method.isEmpty || stream.path.isEmpty {
            submit(.jsonError(status: 400, code: "bad_request", message: "Malformed request headers"), on: stream)
            return
        }
        let request = makeRequest(stream)
        stream.headers = HTTPFields()
        stream.body = []
        stream.awaitingResponse = true
        switch pipeline.handle(request) {
        case .response(let response):
            submit(pipeline.finalize(response, for: request, startedAt: stream.startedAt), on: stream)
        case .deferred(let start):
            let bound = LoopBound(self, loop: connection.loop)
            let streamID = stream.id
            let startedAt = stream.startedAt
            let pipeline = self.pipeline
            start { response in
                let finalized = pipeline.finalize(response, for: request, startedAt: startedAt)
                bound.loop.execute {
                    let handler = bound.value
                    guard let stream = handler.streams[streamID], stream.awaitingResponse else { return }
                    handler.submit(finalized, on: stream)
                    handler.send()
                }
            }
        case .stream(let head, let start):
            let writer = HTTPBodyWriter()
            stream.bodyWriter = writer
            submit(pipeline.finalize(head, for: request, startedAt: stream.startedAt), on: stream)
            if stream.method == "HEAD" { writer.finish() }
            let bound = LoopBound(selfSlot ?? HandlerSlot(self), loop: connection.loop)
            let streamID = stream.id
            writer.attach {
                bound.loop.execute {
                    guard let handler = bound.value.handler, let session = handler.session,
                        handler.streams[streamID] != nil else { return }
                    nghttp2_session_resume_data(session, streamID)
                    handler.send()
                }
            }
            start(writer)
        }
    }

    private func makeRequest(_ stream: Stream) -> HTTPRequest {
        HTTPRequest(
            method: stream.method, target: stream.path, authority: stream.authority,
            scheme: stream.scheme.isEmpty ? (connection.isTLS ? "https" : "http") : stream.scheme,
            version: .http2, headers: stream.headers, body: stream.body, connection: info, streamID: stream.id)
    }

    // MARK: Callbacks (called from the trampolines below)

    func beginHeaders(streamID: Int32) {
        let stream = Stream(id: streamID, startedAt: MonotonicClock.nanoseconds())
        streams[streamID] = stream
        // The dictionary owns the stream; nghttp2 keeps an unretained pointer for fast lookups.
        nghttp2_session_set_stream_user_data(session, streamID, Unmanaged.passUnretained(stream).toOpaque())
    }

    /// The stream's state, through nghttp2's per-stream user data (no hashing on the hot path).
    func stream(_ streamID: Int32) -> Stream? {
        guard let session, let pointer = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
        return Unmanaged<Stream>.fromOpaque(pointer).takeUnretainedValue()
    }

    func header(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let stream = stream(streamID) else { return }
        stream.headerBytes += name.count + value.count + 32
        if stream.headerBytes > pipeline.options.maxHeaderListSize {
            stream.isHeaderListTooLarge = true
            return
        }
        if stream.isHeaderListTooLarge { return }
        let valueString = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            switch Self.pseudoHeader(name) {
            case .method: stream.method = valueString
            case .path: stream.path = valueString
            case .scheme: stream.scheme = valueString
            case .authority: stream.authority = valueString
            case nil: stream.hasBadHeader = true
            }
        } else if name.count == 4 && Self.bytesEqual(name, Self.hostName) {
            if stream.authority == nil { stream.authority = valueString }
        } else {
            // nghttp2 has already rejected upper-case names, so no lowercasing is needed.
            stream.headers.appendLowercased(String(decoding: name, as: UTF8.self), valueString)
        }
    }

    private enum PseudoHeader { case method, path, scheme, authority }

    private static func pseudoHeader(_ name: UnsafeBufferPointer<UInt8>) -> PseudoHeader? {
        switch name.count {
        case 5 where bytesEqual(name, pathName): .path
        case 7 where bytesEqual(name, methodName): .method
        case 7 where bytesEqual(name, schemeName): .scheme
        case 10 where bytesEqual(name, authorityName): .authority
        default: nil
        }
    }

    private static let hostName = Array("host".utf8)
    private static let pathName = Array(":path".utf8)
    private static let methodName = Array(":method".utf8)
    private static let schemeName = Array(":scheme".utf8)
    private static let authorityName = Array(":authority".utf8)

    /// memcmp of two byte runs of the same length (the generic `elementsEqual` is slow here).
    private static func bytesEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: [UInt8]) -> Bool {
        guard a.count == b.count, let base = a.baseAddress else { return a.count == b.count }
        return b.withUnsafeBufferPointer { other in
            guard let otherBase = other.baseAddress else { return false }
            return memcmp(base, otherBase, a.count) == 0
        }
    }

    func dataChunk(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard let stream = stream(streamID), !stream.isBodyTooLarge else { return }
        if stream.body.count + data.count > pipeline.options.maxBodyBytes {
            // Answer 413 now instead of reading the rest: nghttp2 resets the stream (NO_ERROR)
            // once the response has gone out while the request is still open.
            stream.isBodyTooLarge = true
            stream.body = []
            if !stream.requestComplete {
                stream.requestComplete = true
                completedRequests.append(stream)
            }
            return
        }
        stream.body.append(contentsOf: data)
    }

    func requestEnded(streamID: Int32) {
        guard let stream = stream(streamID), !stream.requestComplete else { return }
        stream.requestComplete = true
        completedRequests.append(stream)
    }

    func streamClosed(streamID: Int32) {
        if let session { nghttp2_session_set_stream_user_data(session, streamID, nil) }
        let writer = streams.removeValue(forKey: streamID)?.bodyWriter
        writer?.close()
    }
}

