// APNs Sandbox — what both protocol handlers share: routing, compression, request logs.
import Support

/// Hands requests to the responder and prepares responses for the wire (gzip, logging).
///
/// Shared by every connection; immutable, hence `Sendable`.
public final class HTTPPipeline: Sendable {
    public let responder: any HTTPResponder
    public let options: HTTPServerOptions
    public let logger: Logger
    /// Where ``HandlerResult/blocking(_:)`` work runs.
    let blockingPool: BlockingWorkPool
    /// Answers what a blocking job throws when the responder is not a ``Router`` (which maps its own).
    let errors: ErrorResponder

    /// - Parameter blockingPool: Where blocking work runs (nil: a pool of `options.blockingThreads` of its
    ///   own). ``shutdown()`` ends it either way.
    public init(
        responder: any HTTPResponder, options: HTTPServerOptions, logger: Logger, blockingPool: BlockingWorkPool? = nil
    ) {
        self.responder = responder
        self.options = options
        self.logger = logger
        self.blockingPool = blockingPool ?? BlockingWorkPool(threads: options.blockingThreads)
        self.errors = ErrorResponder(logger: logger)
    }

    /// Ends the worker threads of blocking handlers (after the jobs already queued).
    public func shutdown() {
        blockingPool.shutdown()
    }

    /// Runs `job` on a worker thread unless `request` is cancelled by then; `completion` gets its
    /// response (nil when skipped) on the worker thread.
    func runBlocking(
        _ job: @escaping @Sendable () throws -> HTTPResponse, for request: HTTPRequest,
        completion: @escaping @Sendable (HTTPResponse?) -> Void
    ) {
        let cancellation = request.cancellation
        let errors = self.errors
        blockingPool.submit {
            guard !cancellation.isCancelled else { return completion(nil) }
            do {
                completion(try job())
            } catch {
                completion(errors.response(for: error, to: request))
            }
        }
    }

    func handle(_ request: HTTPRequest) -> HandlerResult {
        responder.respond(to: request)
    }

    /// Compresses large bodies for clients that accept gzip and logs the exchange if enabled.
    func finalize(_ response: HTTPResponse, for request: HTTPRequest, startedAt: UInt64) -> HTTPResponse {
        var response = response
        if response.body.count >= options.gzipMinimumBytes,
           response.headers["content-encoding"] == nil,
           request.method != "HEAD",
           Gzip.acceptsGzip(request.headers["accept-encoding"]),
           let compressed = try? Gzip.compress(response.body),
           compressed.count < response.body.count {
            response.body = compressed
            response.headers.set("content-encoding", "gzip")
            response.headers.append("vary", "accept-encoding")
        }
        // One line per request at debug (or at info with `requestLogging`); its header fields at trace,
        // the authorization's credentials left out.
        if options.requestLogging || logger.level <= .debug {
            let elapsed = Double(MonotonicClock.nanoseconds() &- startedAt) / 1_000_000
            var fields = [
                ("http.method", request.method), ("http.path", String(request.path)),
                ("http.status", "\(response.status)"), ("http.version", request.version.rawValue),
                ("conn.id", "\(request.connection.id)"),
            ]
            if request.version == .http2 { fields.append(("h2.stream_id", "\(request.streamID)")) }
            fields.append(("duration_ms", String(format2(elapsed))))
            logger.log(options.requestLogging ? .info : .debug, "request", fields)
            if logger.level <= .trace {
                let fields = request.headers.map { field in
                    field.name == "authorization" ? "authorization: \(field.value.split(separator: " ").first ?? "") <redacted>"
                        : "\(field.name): \(field.value)"
                }
                logger.trace("request headers", [
                    ("conn.id", "\(request.connection.id)"), ("http.authority", request.authority ?? ""),
                    ("http.headers", fields.joined(separator: "; ")),
                ])
            }
        }
        return response
    }
}

private func format2(_ value: Double) -> String {
    let scaled = (value * 100).rounded() / 100
    return "\(scaled)"
}
