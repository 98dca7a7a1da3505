// APNs Sandbox — handlers without a socket: a ConnectionContext that records what they write, on a real loop.
import Dispatch
import Foundation
import Glibc
import Support
import Transport

@testable import HTTP

/// A ``ConnectionContext`` whose "socket" is an array: what a handler writes and flushes lands in ``written``
/// while the peer reads (``isPeerReading``); otherwise it waits in the output buffer, counted in
/// ``pendingOutputBytes``, until ``peerReads()`` takes it (back-pressure). Closing is recorded, not done:
/// ``closeAfterFlush()`` sets ``isCloseRequested`` (and refuses further output, as ``Connection`` does);
/// ``close()`` ends the handler.
///
/// Loop-confined like a real connection: use it only inside ``HandlerHarness/run(_:)``.
final class TestConnection: ConnectionContext {
    let id: UInt64 = 7
    let loop: EventLoop
    let remoteAddress: SocketAddress
    let localPort = 2197
    let isTLS = false
    let listenerName = "test"
    /// `h2` makes the sniffer pick HTTP/2 without looking at the bytes.
    var alpn: String?
    var peerCertificate: PeerCertificate? { nil }
    let createdAt = MonotonicClock.nanoseconds()
    private(set) var lastReadAt = MonotonicClock.nanoseconds()
    var handler: (any ConnectionHandler)?

    /// Bytes the peer has read.
    private(set) var written: [UInt8] = []
    /// Each batch of bytes the peer read (one per flush while it reads): its size and when (monotonic ns).
    private(set) var deliveries: [(count: Int, at: UInt64)] = []
    private var buffered: [UInt8] = []
    /// While false, flushed bytes stay buffered until ``peerReads()``.
    var isPeerReading = true
    private(set) var isClosed = false
    private(set) var isCloseRequested = false
    private(set) var isReadingPaused = false
    private var wantsDrainNotification = false

    init(loop: EventLoop, alpn: String? = nil) throws {
        self.loop = loop
        self.alpn = alpn
        self.remoteAddress = try SocketAddress(host: "127.0.0.1", port: 50_000)
    }

    var pendingOutputBytes: Int { buffered.count }

    func write(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosed, !isCloseRequested else { return }
        buffered.append(contentsOf: bytes)
    }

    func flush() {
        guard !isClosed, isPeerReading else { return }
        deliverBuffered()
    }

    func setReadingPaused(_ paused: Bool) { isReadingPaused = paused }

    @discardableResult
    func notifyWhenDrained() -> Bool {
        guard !buffered.isEmpty, !isClosed else { return false }
        wantsDrainNotification = true
        return true
    }

    func closeAfterFlush() {
        guard !isClosed, !isCloseRequested else { return }
        isCloseRequested = true
        flush()
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        buffered = []
        handler?.connectionDidClose(self)
        handler = nil
    }

    // MARK: The peer's side

    /// Bytes from the peer, then a flush, as a read on ``Connection`` does. Dropped once closing.
    func receive(_ bytes: [UInt8]) {
        guard !isClosed, !isCloseRequested, !bytes.isEmpty else { return }
        lastReadAt = MonotonicClock.nanoseconds()
        bytes.withUnsafeBytes { handler?.connectionDidReceive(self, bytes: $0) }
        flush()
    }

    func receive(_ text: String) { receive(Array(text.utf8)) }

    /// The peer takes everything buffered (once; with ``isPeerReading`` false the next bytes wait again).
    func peerReads() {
        guard !isClosed else { return }
        deliverBuffered()
    }

    /// What the peer has read since the last call.
    func takeWritten() -> [UInt8] {
        defer { written = [] }
        return written
    }

    func tick(now: UInt64 = MonotonicClock.nanoseconds()) { handler?.connectionTick(self, now: now) }

    /// The server shuts down (as ``Connection`` does it: the handler, then a flush).
    func beginGracefulShutdown() {
        handler?.connectionBeginGracefulShutdown(self)
        flush()
    }

    private func deliverBuffered() {
        if !buffered.isEmpty { deliveries.append((buffered.count, MonotonicClock.nanoseconds())) }
        written.append(contentsOf: buffered)
        buffered.removeAll()
        if wantsDrainNotification {
            wantsDrainNotification = false
            handler?.connectionDidDrainOutput(self)
        }
    }
}

/// A responder made of a closure.
struct TestResponder: HTTPResponder {
    let handle: @Sendable (HTTPRequest) -> HandlerResult

    func respond(to request: HTTPRequest) -> HandlerResult { handle(request) }
}

/// One ``TestConnection`` on its own event loop (an epoll thread: handlers schedule timers and hop back to
/// their loop, and `LoopBound` checks that they do), with the protocol sniffer as its first handler.
///
/// Safety of `@unchecked Sendable`: `connection` and `client` are touched only on `loop`, inside ``run(_:)``.
final class HandlerHarness: @unchecked Sendable {
    let loop: EventLoop
    let pipeline: HTTPPipeline
    private var connection: TestConnection?
    /// The HTTP/2 peer, for tests that speak HTTP/2 (loop-confined too).
    lazy var client = H2TestClient()

    init(alpn: String? = nil, options: HTTPServerOptions = HTTPServerOptions(),
         _ handle: @escaping @Sendable (HTTPRequest) -> HandlerResult) throws {
        loop = try EventLoop(index: 0)
        pipeline = HTTPPipeline(
            responder: TestResponder(handle: handle), options: options, logger: Logger(label: "test", level: .error))
        let pipeline = self.pipeline
        try run { harness in
            let connection = try TestConnection(loop: harness.loop, alpn: alpn)
            connection.handler = ProtocolSniffer(pipeline: pipeline)
            harness.connection = connection
        }
    }

    /// A harness whose requests `backend` answers, with `change` applied to the default options.
    convenience init(_ backend: TestBackend, _ change: (inout HTTPServerOptions) -> Void = { _ in }) throws {
        var options = HTTPServerOptions()
        change(&options)
        try self.init(options: options) { backend.handle($0) }
    }

    /// Stops the loop (closing the connection first, so handlers release their work).
    func stop() {
        try? run { $0.connection?.close() }
        pipeline.shutdown()
        loop.stop()
        loop.waitUntilStopped()
    }

    /// Runs `body` on the loop and waits for it.
    @discardableResult
    func run<T>(_ body: @escaping (HandlerHarness) throws -> T) throws -> T {
        let box = UncheckedBox<Result<T, any Error>?>(nil)
        let job = UncheckedBox(body)
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            box.value = Result { try job.value(self) }
            done.signal()
        }
        done.wait()
        // `!`: set on the loop before the signal.
        return try box.value!.get()
    }

    /// The connection (only inside ``run(_:)``).
    var conn: TestConnection {
        // `!`: set in init.
        connection!
    }

    /// Polls `condition` on the loop until it holds (true) or `timeout` seconds pass (false).
    func waitUntil(timeout: Double = 30, _ condition: @escaping (HandlerHarness) -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try run(condition) { return true }
            usleep(2_000)
        }
        return try run(condition)
    }
}

/// Carries a value into a closure that runs on the loop while the test thread waits for it.
final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A value set from any thread (a handler's `respond`, a cancellation) and read by the test.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

/// The status lines and header blocks of the HTTP/1.1 responses in `bytes`, in order (bodies skipped by
/// their content-length).
func http1Responses(_ bytes: [UInt8]) -> [(status: Int, headers: [String: String], body: String)] {
    var responses: [(status: Int, headers: [String: String], body: String)] = []
    var index = 0
    let crlf2: [UInt8] = [13, 10, 13, 10]
    while bytes.count - index >= 4 {
        guard let end = (index...(bytes.count - 4)).first(where: { Array(bytes[$0..<($0 + 4)]) == crlf2 }) else { break }
        let head = String(decoding: bytes[index..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = end + 4
        let bodyEnd = min(bytes.count, bodyStart + length)
        responses.append((status, headers, String(decoding: bytes[bodyStart..<bodyEnd], as: UTF8.self)))
        index = bodyEnd
    }
    return responses
}
