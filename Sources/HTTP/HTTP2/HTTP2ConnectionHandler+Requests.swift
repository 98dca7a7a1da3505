// APNs Sandbox — HTTP/2 requests: assembling streams from nghttp2's callbacks, the backlog, dispatch.
import CNGHTTP2
import Glibc
import Transport

extension HTTP2ConnectionHandler {
    // MARK: Dispatch

    /// Starts waiting requests, oldest first, while the response bytes held for the peer are within
    /// the budget and no stall holds the connection. A stream reset meanwhile is skipped: its work never runs.
    func dispatchBacklog() {
        while !backlog.isEmpty, !lifecycle.isTerminated, !faults.isStalled,
              connectionGuard.mayStartRequest(heldBytes: heldOutputBytes),
              let stream = backlog.popFirst() {
            guard !stream.isClosed, !stream.isResetting else { continue }
            dispatch(stream)
        }
    }

    /// Queues a stream whose request is complete (or answered early: a body over the limit).
    func enqueue(_ stream: Stream) {
        guard !stream.isQueued else { return }
        stream.isQueued = true
        backlog.append(stream)
    }

    private func dispatch(_ stream: Stream) {
        let options = pipeline.options
        if stream.isHeaderListTooLarge {
            releaseRequestBody(of: stream)
            let response = options.oversizedHeadersResponder?(makeRequest(stream))
                ?? .jsonError(status: 431, code: "header_list_too_large", message: "Header list exceeds \(options.maxHeaderListSize) bytes")
            submit(response, on: stream)
            return
        }
        if stream.isBodyTooLarge {
            let response = options.oversizedBodyResponder?(makeRequest(stream))
                ?? .jsonError(status: 413, code: "body_too_large", message: "Body exceeds \(options.maxBodyBytes) bytes")
            submit(response, on: stream)
            return
        }
        if stream.hasBadHeader || stream.method.isEmpty || stream.path.isEmpty {
            releaseRequestBody(of: stream)
            submit(.jsonError(status: 400, code: "bad_request", message: "Malformed request headers"), on: stream)
            return
        }
        let cancellation = RequestCancellation()
        stream.cancellation = cancellation
        let request = makeRequest(stream, cancellation: cancellation)
        releaseRequestBody(of: stream)
        stream.headers = HTTPFields()
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
                    bound.value.reentering { handler in
                        guard let stream = handler.streams[streamID], stream.awaitingResponse else { return }
                        handler.submitLate(finalized, on: stream)
                        handler.send()
                    }
                }
            }
        case .blocking(let job):
            blockingJobs.append(BlockingJob(stream: stream, request: request, job: job))
            startBlockingJobs()
        case .stream(let head, let start):
            let writer = HTTPBodyWriter(maxBufferedBytes: options.streamBufferBytes)
            stream.bodyWriter = writer
            submit(pipeline.finalize(head, for: request, startedAt: stream.startedAt), on: stream)
            if stream.method == "HEAD" { writer.finish() }
            let bound = LoopBound(selfSlot ?? HandlerSlot(self), loop: connection.loop)
            let streamID = stream.id
            writer.attach {
                bound.loop.execute {
                    bound.value.handler?.reentering { handler in
                        guard let session = handler.session, handler.streams[streamID] != nil else { return }
                        nghttp2_session_resume_data(session, streamID)
                        handler.send()
                    }
                }
            }
            start(writer)
        }
    }

    /// Hands blocking handlers to the worker pool, oldest first, while this connection has fewer than
    /// `maxBlockingRequestsPerConnection` running and its output is within the budget. A stream reset
    /// while its job waited is skipped.
    func startBlockingJobs() {
        let limit = pipeline.options.maxBlockingRequestsPerConnection
        while blockingInFlight < limit, !blockingJobs.isEmpty, !lifecycle.isTerminated,
              connectionGuard.mayStartRequest(heldBytes: heldOutputBytes), let next = blockingJobs.popFirst() {
            guard !next.stream.isClosed, next.stream.awaitingResponse else { continue }
            blockingInFlight += 1
            let bound = LoopBound(self, loop: connection.loop)
            let streamID = next.stream.id
            let startedAt = next.stream.startedAt
            let request = next.request
            let pipeline = self.pipeline
            pipeline.runBlocking(next.job, for: request) { response in
                let finalized = response.map { pipeline.finalize($0, for: request, startedAt: startedAt) }
                bound.loop.execute {
                    bound.value.blockingInFlight -= 1
                    bound.value.reentering { handler in
                        if let finalized, let stream = handler.streams[streamID], stream.awaitingResponse {
                            handler.submitLate(finalized, on: stream)
                        }
                        handler.startBlockingJobs()
                        handler.send()
                    }
                }
            }
        }
    }

    /// A deferred response: submitted unless it would take the held output over the hard bound (a
    /// peer that reads nothing while handlers finish many large responses), else its stream is reset.
    private func submitLate(_ response: HTTPResponse, on stream: Stream) {
        if connectionGuard.admitsLateResponse(heldBytes: heldOutputBytes, size: response.body.count) {
            submit(response, on: stream)
            return
        }
        stream.awaitingResponse = false
        guard let session, !stream.isResetting else { return }
        stream.isResetting = true
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
    }

    private func makeRequest(_ stream: Stream, cancellation: RequestCancellation = RequestCancellation()) -> HTTPRequest {
        HTTPRequest(
            method: stream.method, target: stream.path, authority: stream.authority,
            scheme: stream.scheme.isEmpty ? (connection.isTLS ? "https" : "http") : stream.scheme,
            version: .http2, headers: stream.headers, body: stream.body, connection: info, streamID: stream.id,
            cancellation: cancellation)
    }

    /// The body's bytes go back to the connection's flow-control window (a handler has them now, or
    /// they are dropped).
    func releaseRequestBody(of stream: Stream) {
        stream.body = []
        guard stream.unconsumedBytes > 0 else { return }
        if let session { nghttp2_session_consume_connection(session, stream.unconsumedBytes) }
        bufferedRequestBytes -= stream.unconsumedBytes
        stream.unconsumedBytes = 0
    }

    // MARK: Callbacks (called from the trampolines)

    func beginHeaders(streamID: Int32) {
        // A refused stream gets no state: its header fields and DATA find no stream and are dropped.
        if refusesNewStream(streamID) { return }
        let stream = Stream(id: streamID, startedAt: now)
        streams[streamID] = stream
        connectionGuard.requestActivity(now: now)
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

    /// Body bytes. Kept ones reopen the stream's window at once and the connection's when a handler
    /// takes the body; discarded ones (a body over the limit) reopen only the connection's, so the
    /// peer must stop sending on that stream.
    func dataChunk(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard let session else { return }
        guard let stream = stream(streamID) else {
            nghttp2_session_consume(session, streamID, data.count)
            return
        }
        connectionGuard.requestActivity(now: now)
        if stream.isBodyTooLarge {
            nghttp2_session_consume_connection(session, data.count)
            return
        }
        if stream.body.count + data.count > pipeline.options.maxBodyBytes {
            // Answer 413 now instead of reading the rest; after the response the stream is reset
            // (NO_ERROR), and the request timeout ends an upload that is neither read nor stopped.
            stream.isBodyTooLarge = true
            releaseRequestBody(of: stream)
            nghttp2_session_consume_connection(session, data.count)
            enqueue(stream)
            return
        }
        stream.body.append(contentsOf: data)
        nghttp2_session_consume_stream(session, streamID, data.count)
        stream.unconsumedBytes += data.count
        bufferedRequestBytes += data.count
    }

    func requestEnded(streamID: Int32) {
        guard let stream = stream(streamID), !stream.requestEnded else { return }
        stream.requestEnded = true
        connectionGuard.requestActivity(now: now)
        enqueue(stream)
    }

    /// The peer sent RST_STREAM (counted against the rapid-reset limit).
    func peerResetStream() {
        if case .goAway(let violation) = connectionGuard.peerReset(now: now) {
            perform(lifecycle.violated(violation))
        }
    }

    func streamClosed(streamID: Int32) {
        if let session { nghttp2_session_set_stream_user_data(session, streamID, nil) }
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        releaseRequestBody(of: stream)
        heldResponseBytes -= stream.responseBody.count - stream.responseOffset
        stream.responseBody = []
        stream.responseOffset = 0
        connectionGuard.requestActivity(now: currentTime)
        end(stream)
        applyPendingStreamLimitRaise()
    }
}
