// APNs Sandbox — HTTP/1.1 connections: keep-alive, pipelining, 100-continue, timeouts.
import Transport

/// One HTTP/1.1 server connection.
///
/// Requests are parsed with `HTTP1Parser`; pipelined requests are handled in order and their
/// responses written in the same order even when a handler answers later (`.deferred`). When
/// too many requests queue up, reading pauses. A parse error is answered with its status and a
/// JSON error, then the connection closes (after a short linger so the client reads it).
///
/// Threading: confined to the connection's loop.
final class HTTP1ConnectionHandler: ConnectionHandler {
    private final class Exchange {
        let request: HTTPRequest
        let keepAlive: Bool
        let startedAt: UInt64
        var response: HTTPResponse?
        /// The body of a streaming response; the exchange stays at the head of the queue until it ends.
        var bodyWriter: HTTPBodyWriter?
        var isStreaming = false
        var isChunked = false

        init(request: HTTPRequest, keepAlive: Bool, startedAt: UInt64) {
            self.request = request
            self.keepAlive = keepAlive
            self.startedAt = startedAt
        }
    }

    private unowned let connection: Connection
    private let pipeline: HTTPPipeline
    private var parser: HTTP1Parser
    private var queue: [Exchange] = []
    private var output: [UInt8] = []
    private var midRequestSince: UInt64?
    private var isClosing = false
    private var isGracefulShutdown = false
    private let info: ConnectionInfo
    /// The exchange whose streaming body is being sent (always `queue.first`).
    private var streaming: Exchange?

    init(connection: Connection, pipeline: HTTPPipeline) {
        self.connection = connection
        self.pipeline = pipeline
        var limits = pipeline.options.http1Limits
        limits.maxBodyBytes = pipeline.options.maxBodyBytes
        self.parser = HTTP1Parser(limits: limits)
        self.info = ConnectionInfo(connection: connection)
    }

    func connectionDidReceive(_ connection: Connection, bytes: UnsafeRawBufferPointer) {
        guard !isClosing else { return }
        parser.append(bytes)
        parse()
    }

    private func parse() {
        while !isClosing && queue.count < pipeline.options.maxPipelinedRequests {
            switch parser.next() {
            case .needMoreData:
                trackMidRequest()
                updateReading()
                return
            case .expectContinue:
                HTTP1ResponseWriter.writeContinue(into: &output)
                flushOutput()
            case .request(let head, let body):
                startExchange(head: head, body: body)
            case .error(let error):
                if let head = error.head, let responder = pipeline.options.oversizedBodyResponder,
                   let response = responder(makeRequest(head: head, body: [])) {
                    fail(with: response)
                } else {
                    fail(status: error.status, message: error.message)
                }
                return
            }
        }
        trackMidRequest()
        updateReading()
    }

    private func trackMidRequest() {
        if parser.isMidRequest {
            if midRequestSince == nil { midRequestSince = MonotonicClock.nanoseconds() }
        } else {
            midRequestSince = nil
        }
    }

    private func updateReading() {
        connection.setReadingPaused(queue.count >= pipeline.options.maxPipelinedRequests || isClosing)
    }

    private func makeRequest(head: HTTP1RequestHead, body: [UInt8]) -> HTTPRequest {
        var headers = head.headers
        let authority = headers["host"]
        headers.set("host", nil)
        return HTTPRequest(
            method: head.method, target: head.target, authority: authority,
            scheme: connection.isTLS ? "https" : "http", version: head.version, headers: headers, body: body,
            connection: info)
    }

    private func startExchange(head: HTTP1RequestHead, body: [UInt8]) {
        let request = makeRequest(head: head, body: body)
        let keepAlive = head.keepAlive && !isGracefulShutdown
        let exchange = Exchange(request: request, keepAlive: keepAlive, startedAt: MonotonicClock.nanoseconds())
        queue.append(exchange)
        if !keepAlive { isClosing = true }
        switch pipeline.handle(request) {
        case .response(let response):
            exchange.response = pipeline.finalize(response, for: request, startedAt: exchange.startedAt)
            writeReadyResponses()
        case .deferred(let start):
            let bound = LoopBound(self, loop: connection.loop)
            let pipeline = self.pipeline
            let startedAt = exchange.startedAt
            let exchangeID = ObjectIdentifier(exchange)
            start { response in
                let finalized = pipeline.finalize(response, for: request, startedAt: startedAt)
                bound.loop.execute {
                    let handler = bound.value
                    guard let waiting = handler.queue.first(where: { ObjectIdentifier($0) == exchangeID }) else { return }
                    waiting.response = finalized
                    handler.writeReadyResponses()
                    handler.parse()
                }
            }
        case .stream(let head, let start):
            let writer = HTTPBodyWriter()
            exchange.response = pipeline.finalize(head, for: request, startedAt: exchange.startedAt)
            exchange.bodyWriter = writer
            start(writer)
            writeReadyResponses()
        }
    }

    /// Starts sending a streaming response's body: the head now, the body whenever the writer wakes us.
    private func beginStreaming(_ exchange: Exchange, writer: HTTPBodyWriter) {
        guard let response = exchange.response else { return }
        exchange.isStreaming = true
        exchange.isChunked = HTTP1ResponseWriter.writeStreamHead(
            response, version: exchange.request.version, keepAlive: exchange.keepAlive, into: &output)
        if !exchange.isChunked { isClosing = true }
        streaming = exchange
        flushOutput()
        if exchange.request.method == "HEAD" {
            writer.finish()
        }
        let bound = LoopBound(self, loop: connection.loop)
        writer.attach { bound.loop.execute { bound.value.pumpStream() } }
    }

    /// Sends what the streaming body has ready; ends the exchange when the producer has finished.
    private func pumpStream() {
        guard let exchange = streaming, let writer = exchange.bodyWriter, !connection.isClosed else { return }
        // A slow reader: leave the bytes in the writer (it bounds them) until the socket drains.
        guard connection.pendingOutputBytes <= (1 << 20) else {
            connection.notifyWhenDrained()
            return
        }
        let (bytes, isFinished) = writer.take()
        if exchange.request.method != "HEAD" {
            if exchange.isChunked {
                HTTP1ResponseWriter.appendChunk(bytes, into: &output)
            } else {
                output.append(contentsOf: bytes)
            }
        }
        guard isFinished else {
            flushOutput()
            return
        }
        streaming = nil
        if exchange.isChunked && exchange.request.method != "HEAD" {
            HTTP1ResponseWriter.appendLastChunk(into: &output)
        }
        writer.close()
        queue.removeFirst()
        if !exchange.isChunked || !exchange.keepAlive {
            queue.removeAll()
            flushOutput()
            connection.closeAfterFlush()
            return
        }
        writeReadyResponses()
        parse()
    }

    /// Writes responses from the head of the queue while they are ready (keeps pipelining order).
    private func writeReadyResponses() {
        while let first = queue.first, let response = first.response {
            if let writer = first.bodyWriter {
                if !first.isStreaming { beginStreaming(first, writer: writer) }
                return
            }
            queue.removeFirst()
            HTTP1ResponseWriter.write(
                response, version: first.request.version, keepAlive: first.keepAlive,
                isHeadRequest: first.request.method == "HEAD", into: &output)
            if !first.keepAlive {
                queue.removeAll()
                flushOutput()
                connection.closeAfterFlush()
                return
            }
        }
        flushOutput()
        if isGracefulShutdown && queue.isEmpty && !parser.isMidRequest {
            connection.closeAfterFlush()
        }
    }

    private func flushOutput() {
        guard !output.isEmpty else { return }
        connection.write(output)
        output.removeAll(keepingCapacity: output.count <= 64 << 10)
        connection.flush()
    }

    /// Answers a protocol error after the responses already queued, then closes.
    private func fail(status: Int, message: String) {
        fail(with: .jsonError(status: status, code: Self.code(for: status), message: message))
    }

    private func fail(with response: HTTPResponse) {
        isClosing = true
        let request = HTTPRequest(method: "GET", target: "/", version: .http1_1, connection: info)
        let exchange = Exchange(request: request, keepAlive: false, startedAt: MonotonicClock.nanoseconds())
        exchange.response = response
        queue.append(exchange)
        writeReadyResponses()
    }

    private static func code(for status: Int) -> String {
        switch status {
        case 408: "request_timeout"
        case 413: "body_too_large"
        case 414: "request_line_too_long"
        case 417: "expectation_failed"
        case 431: "headers_too_large"
        case 501: "not_implemented"
        case 505: "http_version_not_supported"
        default: "bad_request"
        }
    }

    // MARK: ConnectionHandler

    func connectionDidDrainOutput(_ connection: Connection) {
        if streaming != nil { pumpStream() }
    }

    func connectionTick(_ connection: Connection, now: UInt64) {
        let options = pipeline.options
        // A streaming client that stopped reading: its backlog is bounded, but it would hold it forever.
        if streaming != nil, connection.pendingOutputBytes > 0, now &- connection.lastWriteAt > options.idleTimeout {
            connection.close()
            return
        }
        if let since = midRequestSince, queue.isEmpty, now &- since > options.requestTimeout {
            midRequestSince = nil
            fail(status: 408, message: "Request not completed within \(options.requestTimeout / 1_000_000_000) s")
            return
        }
        if queue.isEmpty && midRequestSince == nil && now &- connection.lastReadAt > options.idleTimeout {
            connection.closeAfterFlush()
        }
    }

    func connectionBeginGracefulShutdown(_ connection: Connection) {
        isGracefulShutdown = true
        for exchange in queue { exchange.bodyWriter?.finish() }
        if queue.isEmpty && !parser.isMidRequest {
            connection.closeAfterFlush()
        }
    }

    func connectionDidClose(_ connection: Connection) {
        let writers = queue.compactMap(\.bodyWriter)
        queue.removeAll()
        streaming = nil
        for writer in writers { writer.close() }
    }
}
