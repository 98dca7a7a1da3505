// APNs Sandbox — HTTP/1.1 connections: keep-alive, pipelining, 100-continue, timeouts.
import Support
import Transport

/// One HTTP/1.1 server connection.
///
/// Requests are parsed with `HTTP1Parser`; pipelined requests are handled in order and their
/// responses written in the same order even when a handler answers later (`.deferred`). When
/// too many requests queue up, or more response bytes than `maxOutputBytesPerConnection` wait for the
/// client (one that pipelines and never reads), no further request is started and reading pauses
/// until the output drains; a socket that takes nothing for a while is closed by the transport. A
/// parse error is answered with its status and a JSON error, then the connection closes (after a
/// short linger so the client reads it). Requests still queued when the connection closes are
/// cancelled (``HTTPRequest/cancellation``).
///
/// Blocking handlers (store work) run on worker threads, a few at once for safe methods; a blocking
/// handler is never run beside one for an unsafe method (RFC 9112 §9.3.2): a pipelined POST, PATCH or
/// DELETE of the API runs alone and the blocking requests after it start when it is done, as if they were
/// handled one by one. Deferred handlers (a push awaiting its commit, a long-poll) are not held back by
/// this: pipelined pushes are committed in order by the store anyway, and their answers go out in order.
///
/// An absolute-form target (`POST http://host/3/device/…`, RFC 9112 §3.2.2) is served like its
/// origin form, with the authority taken from the target instead of `Host`.
///
/// On a cleartext connection a request that offers an h2c upgrade (``H2CUpgrade``) is, once its body has
/// been read whole, answered `101 Switching Protocols`; the connection is handed to an
/// ``HTTP2ConnectionHandler`` that answers the request as stream 1. Only while no earlier request is still
/// being answered and the server is not shutting down; otherwise, and over TLS, the offer is ignored.
///
/// Keep-alive, the last request, graceful shutdown and the switch to HTTP/2 are decided by an
/// ``HTTP1ConnectionStateMachine``. Streaming bodies are in `HTTP1ConnectionHandler+Streaming.swift`, requests
/// and errors in `+Requests.swift`, the h2c upgrade in `+Upgrade.swift`, a response's ``ConnectionFault`` in
/// `+Faults.swift`.
///
/// Threading: confined to the connection's loop.
final class HTTP1ConnectionHandler: ConnectionHandler {
    final class Exchange {
        let request: HTTPRequest
        let keepAlive: Bool
        let startedAt: UInt64
        var response: HTTPResponse?
        /// The body of a streaming response; the exchange stays at the head of the queue until it ends.
        var bodyWriter: HTTPBodyWriter?
        var isStreaming = false
        var isChunked = false
        /// A blocking handler's work, until it is handed to the worker pool.
        var blockingJob: (@Sendable () throws -> HTTPResponse)?
        /// Its method is not safe (RFC 9110 §9.2.1): it must not run beside other requests.
        var isUnsafe: Bool {
            switch request.method {
            case "GET", "HEAD", "OPTIONS": false
            default: true
            }
        }

        init(request: HTTPRequest, keepAlive: Bool, startedAt: UInt64) {
            self.request = request
            self.keepAlive = keepAlive
            self.startedAt = startedAt
        }
    }

    unowned let connection: any ConnectionContext
    let pipeline: HTTPPipeline
    var parser: HTTP1Parser
    var queue: [Exchange] = []
    var output: [UInt8] = []
    var midRequestSince: UInt64?
    /// When a request last started or a response last went out: idle time counts from here, not from the
    /// last bytes read (blank lines between requests, accepted before a request line, are not activity).
    var lastRequestActivity = MonotonicClock.nanoseconds()
    /// Keep-alive, closing, shutdown, upgrade (``HTTP1ConnectionStateMachine``).
    var lifecycle = HTTP1ConnectionStateMachine()
    /// No request is started while the output waits for the client (above the budget).
    private var isOutputHeld = false
    /// Bytes of responses finished but not yet written (waiting behind an earlier one).
    var queuedResponseBytes = 0
    private let connectionGuard: ConnectionGuard
    /// Blocking handlers of this connection running (or queued in the pool) now.
    private var blockingInFlight = 0
    /// Blocking handlers with an unsafe method not finished yet: no later request starts meanwhile.
    private var unsafeBlockingJobs = 0
    let info: ConnectionInfo
    /// The exchange whose streaming body is being sent (always `queue.first`).
    var streaming: Exchange?
    /// Connection faults in progress: stalls, their timers (`+Faults.swift`).
    var faults = FaultState()

    init(connection: any ConnectionContext, pipeline: HTTPPipeline) {
        self.connection = connection
        self.pipeline = pipeline
        var limits = pipeline.options.http1Limits
        limits.maxBodyBytes = pipeline.options.maxBodyBytes
        self.parser = HTTP1Parser(limits: limits)
        self.info = ConnectionInfo(connection: connection)
        self.connectionGuard = ConnectionGuard(configuration: pipeline.options.guardConfiguration, now: connection.createdAt)
    }

    func connectionDidReceive(_ connection: any ConnectionContext, bytes: UnsafeRawBufferPointer) {
        guard lifecycle.readsRequests else { return }
        parser.append(bytes)
        parse()
    }

    /// Response bytes held for the client: unflushed, in the socket's backlog, or queued.
    var heldOutputBytes: Int { connection.pendingOutputBytes + output.count + queuedResponseBytes }

    func parse() {
        while lifecycle.readsRequests && queue.count < pipeline.options.maxPipelinedRequests && unsafeBlockingJobs == 0
            && faults.stalls == 0
        {
            guard connectionGuard.mayStartRequest(heldBytes: heldOutputBytes) else {
                // Resumed by connectionDidDrainOutput, or by the queued responses going out.
                isOutputHeld = true
                _ = connection.notifyWhenDrained()
                break
            }
            isOutputHeld = false
            switch parser.next() {
            case .needMoreData:
                trackMidRequest()
                updateReading()
                return
            case .expectContinue:
                HTTP1ResponseWriter.writeContinue(into: &output)
                flushOutput()
            case .request(let head, let body):
                if let settings = acceptableUpgrade(head) {
                    switchToHTTP2(head: head, body: body, settings: settings)
                    return
                }
                startExchange(head: head, body: body)
            case .error(let error):
                let options = pipeline.options
                let responder = error.status == 431 ? options.oversizedHeadersResponder
                    : error.status == 413 ? options.oversizedBodyResponder : nil
                if let head = error.head, let responder, let response = responder(makeRequest(head: head, body: [])) {
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
            if midRequestSince == nil {
                midRequestSince = MonotonicClock.nanoseconds()
                lastRequestActivity = midRequestSince ?? lastRequestActivity
            }
        } else {
            midRequestSince = nil
        }
    }

    /// Reading pauses while too many requests are queued, the output waits for the client, or a stall holds
    /// the connection.
    func updateReading() {
        connection.setReadingPaused(
            queue.count >= pipeline.options.maxPipelinedRequests || !lifecycle.readsRequests || isOutputHeld
                || faults.stalls > 0)
    }

    private func startExchange(head: HTTP1RequestHead, body: [UInt8]) {
        let request = makeRequest(head: head, body: body)
        let keepAlive = lifecycle.keepsAlive(requested: head.keepAlive)
        let exchange = Exchange(request: request, keepAlive: keepAlive, startedAt: MonotonicClock.nanoseconds())
        lastRequestActivity = exchange.startedAt
        queue.append(exchange)
        if !keepAlive { lifecycle.lastRequestRead() }
        switch pipeline.handle(request) {
        case .response(let response):
            setResponse(pipeline.finalize(response, for: request, startedAt: exchange.startedAt), of: exchange)
            writeReadyResponses()
        case .deferred(let start):
            let bound = LoopBound(self, loop: connection.loop)
            let pipeline = self.pipeline
            let startedAt = exchange.startedAt
            let exchangeID = ObjectIdentifier(exchange)
            start { response in
                let finalized = pipeline.finalize(response, for: request, startedAt: startedAt)
                bound.loop.execute {
                    bound.value.reentering { handler in
                        guard let waiting = handler.queue.first(where: { ObjectIdentifier($0) == exchangeID }) else { return }
                        handler.setResponse(finalized, of: waiting)
                        handler.writeReadyResponses()
                        handler.parse()
                    }
                }
            }
        case .blocking(let job):
            exchange.blockingJob = job
            if exchange.isUnsafe { unsafeBlockingJobs += 1 }
            startBlockingJobs()
        case .stream(let head, let start):
            let writer = HTTPBodyWriter(maxBufferedBytes: pipeline.options.streamBufferBytes)
            exchange.response = pipeline.finalize(head, for: request, startedAt: exchange.startedAt)
            exchange.bodyWriter = writer
            start(writer)
            writeReadyResponses()
        }
    }

    /// Hands queued blocking handlers to the worker pool, in request order, while fewer than
    /// `maxBlockingRequestsPerConnection` run and the output is within the budget; one with an unsafe
    /// method waits until the others have finished.
    private func startBlockingJobs() {
        let limit = pipeline.options.maxBlockingRequestsPerConnection
        for exchange in queue {
            guard blockingInFlight < limit, connectionGuard.mayStartRequest(heldBytes: heldOutputBytes) else { return }
            guard let job = exchange.blockingJob else { continue }
            let isUnsafe = exchange.isUnsafe
            guard !isUnsafe || blockingInFlight == 0 else { return }
            exchange.blockingJob = nil
            blockingInFlight += 1
            let bound = LoopBound(self, loop: connection.loop)
            let pipeline = self.pipeline
            let request = exchange.request
            let startedAt = exchange.startedAt
            let exchangeID = ObjectIdentifier(exchange)
            pipeline.runBlocking(job, for: request) { response in
                let finalized = response.map { pipeline.finalize($0, for: request, startedAt: startedAt) }
                bound.loop.execute {
                    bound.value.blockingInFlight -= 1
                    if isUnsafe { bound.value.unsafeBlockingJobs -= 1 }
                    bound.value.reentering { handler in
                        if let finalized, let waiting = handler.queue.first(where: { ObjectIdentifier($0) == exchangeID }) {
                            handler.setResponse(finalized, of: waiting)
                            handler.writeReadyResponses()
                        }
                        handler.startBlockingJobs()
                        handler.parse()
                    }
                }
            }
        }
    }

    /// Runs `body` for work that comes back to the connection from outside an I/O event (a handler
    /// finishing later, a streaming body waking it): nothing once the connection has closed, and the
    /// connection is kept alive through `body` (a write error can close it midway; it would otherwise
    /// be freed under the code still using it).
    func reentering(_ body: (HTTP1ConnectionHandler) -> Void) {
        guard lifecycle.takesCallbacks else { return }
        withExtendedLifetime(connection) { body(self) }
    }

    /// Records a finished response (counted as held output until it is written).
    /// The ``ConnectionFault/close`` fault acts here, at once (answers still queued are dropped); the others when
    /// the response reaches the head of the queue (``writeReadyResponses()``).
    func setResponse(_ response: HTTPResponse, of exchange: Exchange) {
        if case .close? = response.connectionFault { return connection.close() }
        exchange.response = response
        queuedResponseBytes += response.body.count
    }

    /// Writes responses from the head of the queue while they are ready (keeps pipelining order).
    func writeReadyResponses() {
        while let first = queue.first, let response = first.response {
            if let writer = first.bodyWriter {
                if !first.isStreaming { beginStreaming(first, writer: writer) }
                return
            }
            if let fault = response.connectionFault {
                guard carryOut(fault, response, of: first) else { return }
                continue
            }
            queue.removeFirst()
            lastRequestActivity = MonotonicClock.nanoseconds()
            queuedResponseBytes -= response.body.count
            HTTP1ResponseWriter.write(
                response, version: first.request.version, keepAlive: first.keepAlive,
                isHeadRequest: first.request.method == "HEAD", into: &output)
            if !first.keepAlive {
                queue.removeAll()
                queuedResponseBytes = 0
                flushOutput()
                connection.closeAfterFlush()
                return
            }
        }
        flushOutput()
        perform(lifecycle.responsesWritten(isIdle: isIdle))
    }

    /// No request queued or partly read.
    private var isIdle: Bool { queue.isEmpty && !parser.isMidRequest }

    private func perform(_ action: HTTP1ConnectionStateMachine.Action) {
        switch action {
        case .none: break
        case .closeAfterFlush: connection.closeAfterFlush()
        }
    }

    func flushOutput() {
        guard !output.isEmpty else { return }
        connection.write(output)
        output.removeAll(keepingCapacity: output.count <= 64 << 10)
        connection.flush()
    }

    // MARK: ConnectionHandler

    func connectionDidDrainOutput(_ connection: any ConnectionContext) {
        if streaming != nil { pumpStream() }
        guard !connection.isClosed else { return }
        startBlockingJobs()
        if isOutputHeld { parse() }
    }

    func connectionTick(_ connection: any ConnectionContext, now: UInt64) {
        let options = pipeline.options
        // (A client that stopped reading, streaming or not, is closed by the transport once its socket
        // has taken nothing for `writeStallTimeout`.)
        if let since = midRequestSince, queue.isEmpty, now &- since > options.requestTimeout {
            midRequestSince = nil
            fail(status: 408, message: "Request not completed within \(options.requestTimeout / 1_000_000_000) s")
            return
        }
        if queue.isEmpty && midRequestSince == nil && now &- lastRequestActivity > options.idleTimeout {
            connection.closeAfterFlush()
        }
    }

    func connectionBeginGracefulShutdown(_ connection: any ConnectionContext) {
        for exchange in queue { exchange.bodyWriter?.finish() }
        perform(lifecycle.shutdownRequested(isIdle: isIdle))
    }

    func connectionDidClose(_ connection: any ConnectionContext) {
        lifecycle.connectionClosed()
        endFaults()
        let writers = queue.compactMap(\.bodyWriter)
        let waiting = queue.map(\.request.cancellation)
        queue.removeAll()
        queuedResponseBytes = 0
        streaming = nil
        for writer in writers { writer.close() }
        // Nobody reads these responses any more: long-polls and streams drop their work.
        for cancellation in waiting { cancellation.cancel() }
    }
}
