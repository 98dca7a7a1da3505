// APNs Sandbox — the `http2` fuzz target: a structure-aware frame sequence into the server's HTTP/2 handler.
//
// The input is a program: each step a frame (HEADERS with an HPACK block that nghttp2's own encoder wrote, perhaps
// split into CONTINUATIONs; DATA; RST_STREAM; SETTINGS; PING; WINDOW_UPDATE; PRIORITY; GOAWAY; or a raw frame of
// any type) or an act of the peer (hand over what is written so far, stop or resume reading, let time pass).
// The frames go, after the client preface, into the same handler the server gives every connection
// (`HTTPConnectionFactory`), through nghttp2 and our callbacks, on a real event loop, with limits small enough
// to be reached; the responder answers plainly, deferred, streamed, large (flow control) or from a worker.
import CNGHTTP2
import Dispatch
import HTTP
import Support
import Transport

enum HTTP2Fuzz {
    /// One loop for every input; each input runs on it, start to end.
    static let loop: EventLoop = {
        guard let loop = try? EventLoop(index: 0) else { fatalError("no event loop") }
        return loop
    }()

    static let pipeline: HTTPPipeline = {
        var options = HTTPServerOptions()
        options.maxConcurrentStreams = 8
        options.maxHeaderListSize = 2000
        options.maxBodyBytes = 4096
        options.maxOutputBytesPerConnection = 64 << 10
        options.maxRequestBodyBytesPerConnection = 16 << 10
        options.streamResetBurst = 8
        options.streamResetsPerSecond = 1
        options.discardedDataBurstBytes = 32 << 10
        options.discardedDataBytesPerSecond = 1024
        options.blockingThreads = 1
        options.requestTimeout = 2_000_000_000
        options.sendTimeout = 3_000_000_000
        options.idleTimeout = 5_000_000_000
        return HTTPPipeline(responder: Responder(), options: options, logger: Logger(label: "fuzz", level: .error))
    }()

    static func run(_ input: [UInt8]) {
        let done = DispatchSemaphore(value: 0)
        let program = SendableBytes(bytes: input)
        loop.execute {
            var session = Session(program: program.bytes)
            session.run()
            done.signal()
        }
        done.wait()
    }

    struct SendableBytes: Sendable { let bytes: [UInt8] }

    /// The responder: what a request's path asks for.
    struct Responder: HTTPResponder {
        func respond(to request: HTTPRequest) -> HandlerResult {
            let body = Array("ok \(request.body.count)".utf8)
            switch request.path {
            case "/big": return .response(HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 100_000)))
            case "/deferred": return .deferred { respond in respond(HTTPResponse(status: 202, body: body)) }
            case "/blocking": return .blocking { HTTPResponse(status: 200, body: body) }
            case "/stream":
                return .stream(HTTPResponse(status: 200)) { writer in
                    _ = writer.write([UInt8](repeating: 0x62, count: 3000))
                    writer.finish()
                }
            default: return .response(HTTPResponse(status: request.method == "POST" ? 200 : 405, body: body))
            }
        }
    }

    /// One connection, driven by the program.
    struct Session {
        var program: ByteReader
        let connection: FuzzConnection
        var pending: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        var now = MonotonicClock.nanoseconds()
        let encoder = HPACKEncoder()

        init(program: [UInt8]) {
            self.program = ByteReader(bytes: program)
            connection = FuzzConnection(loop: HTTP2Fuzz.loop)
            connection.handler = HTTPConnectionFactory(pipeline: HTTP2Fuzz.pipeline).makeHandler()
            frame(type: 4, flags: 0, stream: 0, payload: [])  // the client's SETTINGS
        }

        mutating func run() {
            var steps = 0
            while !program.isAtEnd, steps < 200, !connection.isClosed {
                steps += 1
                step()
            }
            deliver()
            connection.peerReads()
            connection.close()
        }

        mutating func step() {
            let op = program.byte() % 13
            let stream = UInt32(program.byte() % 8) * 2 + 1
            switch op {
            case 0, 1: headers(stream: stream)
            case 2, 3:
                let flags = program.byte() & 0x09  // END_STREAM, PADDED
                var payload = program.take(Int(program.byte()) * (op == 3 ? 32 : 1))
                if flags & 0x08 != 0 { payload = [UInt8(min(payload.count, 255) / 2)] + payload }
                frame(type: 0, flags: flags, stream: stream, payload: payload)
            case 4: frame(type: 3, flags: 0, stream: stream, payload: program.take(4))
            case 5:
                var payload: [UInt8] = []
                for _ in 0..<Int(program.byte() % 4) { payload += [0, program.byte() % 8] + program.take(4) }
                frame(type: 4, flags: program.byte() & 1, stream: 0, payload: payload)
            case 6: frame(type: 6, flags: program.byte() & 1, stream: 0, payload: program.take(8))
            case 7: frame(type: 8, flags: 0, stream: program.byte() & 1 == 0 ? 0 : stream, payload: program.take(4))
            case 8: frame(type: 2, flags: 0, stream: stream, payload: program.take(5))
            case 9: frame(type: 7, flags: 0, stream: 0, payload: program.take(8))
            case 10:
                let type = program.byte() % 12
                frame(type: type, flags: program.byte(), stream: program.byte() & 1 == 0 ? 0 : stream,
                      payload: program.take(Int(program.byte())))
            case 11: deliver()
            default:
                switch program.byte() % 3 {
                case 0: connection.isPeerReading.toggle()
                case 1: connection.peerReads()
                default:
                    now &+= UInt64(program.byte()) * 100_000_000
                    connection.handler?.connectionTick(connection, now: now)
                }
            }
        }

        /// A request's HEADERS (pseudo-headers and fields from the program), perhaps with CONTINUATIONs.
        mutating func headers(stream: UInt32) {
            let paths = ["/3/device/abcd", "/big", "/deferred", "/blocking", "/stream", "/", "*", ""]
            let choice = program.byte()
            var fields: [(String, String)] = [
                (":method", choice & 1 == 0 ? "POST" : "GET"), (":scheme", "http"),
                (":path", paths[Int(choice >> 1) % paths.count]), (":authority", "fuzz"),
            ]
            if choice & 0x80 != 0 { fields.removeFirst() }
            for _ in 0..<Int(program.byte() % 4) {
                let names = ["content-length", "apns-topic", "te", "connection", "x-Upper", "cookie", ":path", ""]
                let name = names[Int(program.byte()) % names.count]
                fields.append((name, String(decoding: program.take(Int(program.byte() % 32)), as: UTF8.self)))
            }
            let block = encoder.encode(fields)
            var flags = program.byte() & 0x21  // END_STREAM, PRIORITY
            let priority: [UInt8] = flags & 0x20 != 0 ? program.take(5) : []
            let split = program.byte() & 1 == 1 && block.count > 1 ? block.count / 2 : block.count
            if split == block.count { flags |= 0x04 }  // END_HEADERS
            frame(type: 1, flags: flags, stream: stream, payload: priority + block[..<split])
            if split < block.count { frame(type: 9, flags: 0x04, stream: stream, payload: Array(block[split...])) }
        }

        mutating func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) {
            let length = payload.count
            pending += [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
                        UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF),
                        UInt8(stream & 0xFF)] + payload
        }

        mutating func deliver() {
            connection.receive(pending)
            pending = []
        }
    }
}

/// Reads a fuzz input a piece at a time; past its end every byte is 0.
struct ByteReader {
    let bytes: [UInt8]
    var index = 0

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        defer { index += 1 }
        return index < bytes.count ? bytes[index] : 0
    }

    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + count)
        defer { index = max(index, end) }
        return index < end ? Array(bytes[index..<end]) : []
    }
}

/// nghttp2's HPACK encoder (one per connection, so later blocks use its dynamic table, as a client's do).
final class HPACKEncoder {
    private var deflater: OpaquePointer?

    init() {
        nghttp2_hd_deflate_new(&deflater, 4096)
    }

    deinit {
        nghttp2_hd_deflate_del(deflater)
    }

    func encode(_ fields: [(String, String)]) -> [UInt8] {
        var storage = fields.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        var output = [UInt8](repeating: 0, count: 8192)
        let written = storage.withUnsafeMutableBufferPointer { pairs -> Int in
            var pointers: [(UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>)] = []
            defer { for (name, value) in pointers { name.deallocate(); value.deallocate() } }
            var nva: [nghttp2_nv] = pairs.map { name, value in
                let n = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, name.count))
                let v = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, value.count))
                n.initialize(from: name, count: name.count)
                v.initialize(from: value, count: value.count)
                pointers.append((n, v))
                return nghttp2_nv(name: n, value: v, namelen: name.count, valuelen: value.count,
                                  flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nghttp2_hd_deflate_hd(deflater, &output, output.count, &nva, nva.count)
        }
        return written > 0 ? Array(output[..<written]) : []
    }
}

/// A connection without a socket: output is counted and dropped when the peer reads; closing is done at once.
final class FuzzConnection: ConnectionContext {
    let id: UInt64 = 1
    let loop: EventLoop
    let remoteAddress: SocketAddress
    let localPort = 8080
    let isTLS = false
    let listenerName = "fuzz"
    let alpn: String? = nil
    var peerCertificate: PeerCertificate? { nil }
    let createdAt = MonotonicClock.nanoseconds()
    private(set) var lastReadAt = MonotonicClock.nanoseconds()
    var handler: (any ConnectionHandler)?
    private(set) var pendingOutputBytes = 0
    private(set) var isClosed = false
    private var isClosing = false
    private var wantsDrain = false
    var isPeerReading = true

    init(loop: EventLoop) {
        self.loop = loop
        guard let address = try? SocketAddress(host: "127.0.0.1", port: 50_000) else { fatalError("no address") }
        remoteAddress = address
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        if !isClosed, !isClosing { pendingOutputBytes += bytes.count }
    }

    func flush() {
        if isPeerReading { peerReads() }
    }

    func peerReads() {
        guard !isClosed, pendingOutputBytes > 0 else { return }
        pendingOutputBytes = 0
        if isClosing { return close() }
        if wantsDrain {
            wantsDrain = false
            handler?.connectionDidDrainOutput(self)
        }
    }

    func setReadingPaused(_ paused: Bool) {}

    @discardableResult
    func notifyWhenDrained() -> Bool {
        guard pendingOutputBytes > 0, !isClosed else { return false }
        wantsDrain = true
        return true
    }

    func closeAfterFlush() {
        isClosing = true
        if pendingOutputBytes == 0 || isPeerReading { close() }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        let handler = self.handler
        self.handler = nil
        handler?.connectionDidClose(self)
    }

    func receive(_ bytes: [UInt8]) {
        guard !isClosed, !isClosing, !bytes.isEmpty else { return }
        lastReadAt = MonotonicClock.nanoseconds()
        bytes.withUnsafeBytes { handler?.connectionDidReceive(self, bytes: $0) }
        flush()
    }
}
