// APNs Sandbox — nghttp2's own client session as the peer of HTTP2ConnectionHandler in tests, in memory.
import CNGHTTP2
import Support

/// An HTTP/2 client that never sees a socket: ``output()`` is what it would send, ``receive(_:)`` takes what
/// the server wrote. It records the frames it receives (GOAWAYs with their last stream id, error code and
/// debug data; RST_STREAMs; HEADERS and DATA), each stream's `:status` and body, and how streams closed.
///
/// Confined to one thread (the harness's loop); callbacks are non-capturing trampolines over `user_data`.
final class H2TestClient {
    struct GoAway: Equatable {
        var lastStreamID: Int32
        var errorCode: UInt32
        var debugData: String
    }

    /// A DATA frame as received: its stream, payload length, END_STREAM, and when it arrived (monotonic ns).
    struct DataFrame: Equatable {
        var streamID: Int32
        var length: Int
        var endStream: Bool
        var receivedAt: UInt64
    }

    enum Event: Equatable {
        case settings(ack: Bool)
        case headers(streamID: Int32, endStream: Bool)
        case data(streamID: Int32, endStream: Bool)
        case goAway(GoAway)
        case rstStream(streamID: Int32, errorCode: UInt32)
        case other(type: UInt8)
    }

    private var session: OpaquePointer?
    private(set) var events: [Event] = []
    private(set) var statuses: [Int32: String] = [:]
    private(set) var bodies: [Int32: [UInt8]] = [:]
    /// Streams nghttp2 closed, with the error code (0: complete).
    private(set) var closedStreams: [Int32: UInt32] = [:]
    /// Every DATA frame, in order.
    private(set) var dataFrames: [DataFrame] = []
    /// SETTINGS_MAX_CONCURRENT_STREAMS of each (non-ACK) SETTINGS frame that carried it, in order.
    private(set) var maxConcurrentStreamsSettings: [UInt32] = []
    /// When each HEADERS frame arrived, by stream (monotonic ns).
    private(set) var headersReceivedAt: [Int32: UInt64] = [:]
    fileprivate var uploads: [Int32: (bytes: [UInt8], offset: Int)] = [:]

    init() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, clientFrameReceived)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, clientHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, clientDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, clientStreamClosed)
        nghttp2_session_client_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil, 0)
    }

    deinit {
        nghttp2_session_del(session)
    }

    var goAways: [GoAway] { events.compactMap { if case .goAway(let g) = $0 { g } else { nil } } }

    /// Opens a stream; with a `body`, it goes in DATA frames after the HEADERS.
    /// - Returns: the stream id.
    @discardableResult
    func request(method: String = "GET", path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) -> Int32 {
        let fields = [(":method", method), (":path", path), (":scheme", "http"), (":authority", "sandbox.test")] + headers
        var storage: [UInt8] = []
        var ranges: [(name: Int, nameLength: Int, value: Int, valueLength: Int)] = []
        for (name, value) in fields {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        return storage.withUnsafeMutableBufferPointer { buffer in
            // `!`: the fields are never empty.
            let base = buffer.baseAddress!
            var nva = ranges.map {
                nghttp2_nv(name: base + $0.name, value: base + $0.value, namelen: $0.nameLength, valuelen: $0.valueLength,
                           flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            guard let body else { return nghttp2_submit_request(session, nil, &nva, nva.count, nil, nil) }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: clientReadUpload)
            let id = nghttp2_submit_request(session, nil, &nva, nva.count, &provider, nil)
            uploads[id] = (body, 0)
            return id
        }
    }

    /// Takes over a connection its HTTP/1.1 request was upgraded on (h2c): that request is stream 1, and
    /// `settings` the SETTINGS payload its HTTP2-Settings carried.
    func upgrade(settings: [UInt8]) -> Int32 {
        settings.withUnsafeBufferPointer { nghttp2_session_upgrade2(session, $0.baseAddress, $0.count, 0, nil) }
    }

    /// Sends a PING (its ACK is recorded as `.other(type: 6)`).
    func ping() {
        nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Resets a stream (RST_STREAM CANCEL).
    func reset(_ streamID: Int32) {
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
    }

    /// What the client sends now (the connection preface first).
    func output() -> [UInt8] {
        var bytes: [UInt8] = []
        var data: UnsafePointer<UInt8>?
        while true {
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { break }
            bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
        return bytes
    }

    /// Takes the server's bytes. - Returns: nghttp2's result (bytes processed, or a negative error).
    @discardableResult
    func receive(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
    }

    /// Passes bytes both ways until neither side has more.
    func exchange(with connection: TestConnection) {
        for _ in 0..<100 {
            let out = output()
            connection.receive(out)
            let back = connection.takeWritten()
            receive(back)
            if out.isEmpty && back.isEmpty { return }
        }
    }

    fileprivate func record(_ frame: UnsafePointer<nghttp2_frame>) {
        let header = frame.pointee.hd
        let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch header.type {
        case UInt8(NGHTTP2_SETTINGS.rawValue):
            events.append(.settings(ack: header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0))
            let settings = frame.pointee.settings
            for i in 0..<settings.niv where settings.iv[i].settings_id == Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue) {
                maxConcurrentStreamsSettings.append(settings.iv[i].value)
            }
        case UInt8(NGHTTP2_HEADERS.rawValue):
            events.append(.headers(streamID: header.stream_id, endStream: endStream))
            headersReceivedAt[header.stream_id] = MonotonicClock.nanoseconds()
        case UInt8(NGHTTP2_DATA.rawValue):
            events.append(.data(streamID: header.stream_id, endStream: endStream))
            dataFrames.append(DataFrame(
                streamID: header.stream_id, length: header.length, endStream: endStream, receivedAt: MonotonicClock.nanoseconds()))
        case UInt8(NGHTTP2_GOAWAY.rawValue):
            let goaway = frame.pointee.goaway
            let debug = goaway.opaque_data.map { String(decoding: UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len), as: UTF8.self) }
            events.append(.goAway(GoAway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code, debugData: debug ?? "")))
        case UInt8(NGHTTP2_RST_STREAM.rawValue):
            events.append(.rstStream(streamID: header.stream_id, errorCode: frame.pointee.rst_stream.error_code))
        default:
            events.append(.other(type: header.type))
        }
    }

    fileprivate func header(streamID: Int32, name: String, value: String) {
        if name == ":status" { statuses[streamID] = value }
    }

    fileprivate func data(streamID: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        bodies[streamID, default: []].append(contentsOf: bytes)
    }

    fileprivate func closed(streamID: Int32, errorCode: UInt32) {
        closedStreams[streamID] = errorCode
    }
}

private func client(_ userData: UnsafeMutableRawPointer?) -> H2TestClient? {
    userData.map { Unmanaged<H2TestClient>.fromOpaque($0).takeUnretainedValue() }
}

private let clientFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    if let frame { client(userData)?.record(frame) }
    return 0
}

private let clientHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value else { return 0 }
    client(userData)?.header(
        streamID: frame.pointee.hd.stream_id,
        name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
        value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
    return 0
}

private let clientDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    if let data { client(userData)?.data(streamID: streamID, UnsafeBufferPointer(start: data, count: length)) }
    return 0
}

private let clientStreamClosed: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    client(userData)?.closed(streamID: streamID, errorCode: errorCode)
    return 0
}

private let clientReadUpload: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let client = client(userData), let upload = client.uploads[streamID] else { return 0 }
    let n = min(length, upload.bytes.count - upload.offset)
    upload.bytes.withUnsafeBufferPointer { source in
        if n > 0, let base = source.baseAddress { buffer.update(from: base + upload.offset, count: n) }
    }
    client.uploads[streamID]?.offset += n
    if upload.offset + n >= upload.bytes.count {
        flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        client.uploads[streamID] = nil
    }
    return n
}
