// APNs Sandbox — nghttp2's C callbacks for HTTP2ConnectionHandler, and the handler slot.
import CNGHTTP2
import Glibc

/// A strong reference to the handler that the handler clears when its connection closes.
/// Loop-confined (reached only through `LoopBound`).
final class HandlerSlot {
    var handler: HTTP2ConnectionHandler?

    init(_ handler: HTTP2ConnectionHandler) {
        self.handler = handler
    }
}

// MARK: - nghttp2 trampolines (non-capturing; `user_data` is the unretained handler)

private func handler(_ userData: UnsafeMutableRawPointer?) -> HTTP2ConnectionHandler? {
    guard let userData else { return nil }
    return Unmanaged<HTTP2ConnectionHandler>.fromOpaque(userData).takeUnretainedValue()
}

let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
    guard let frame, let handler = handler(userData) else { return 0 }
    handler.decodedHeaderBlockBytes = 0
    handler.headerBlockStreamID = frame.pointee.hd.stream_id
    if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
       frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
        handler.beginHeaders(streamID: frame.pointee.hd.stream_id)
    }
    return 0
}

let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value, let handler = handler(userData) else { return 0 }
    // Every field of every block counts, whether or not its stream was refused: past the bound nghttp2 must stop
    // decoding (an HPACK bomb), which only a fatal error from here does; the handler has sent the GOAWAY.
    guard handler.countDecodedHeaderField(nameLength + valueLength) else { return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    handler.header(
        streamID: frame.pointee.hd.stream_id,
        name: UnsafeBufferPointer(start: name, count: nameLength),
        value: UnsafeBufferPointer(start: value, count: valueLength))
    return 0
}

let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let data, let handler = handler(userData) else { return 0 }
    handler.dataChunk(streamID: streamID, data: UnsafeBufferPointer(start: data, count: length))
    return 0
}

let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame, let handler = handler(userData) else { return 0 }
    let type = frame.pointee.hd.type
    let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    if endStream && (type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue)) {
        handler.requestEnded(streamID: frame.pointee.hd.stream_id)
    } else if type == UInt8(NGHTTP2_RST_STREAM.rawValue) {
        handler.peerResetStream()
    }
    return 0
}

let onInvalidFrame: nghttp2_on_invalid_frame_recv_callback = { _, frame, libErrorCode, userData in
    guard let frame, let handler = handler(userData) else { return 0 }
    handler.invalidFrame(type: frame.pointee.hd.type, streamID: frame.pointee.hd.stream_id, libErrorCode: libErrorCode)
    return 0
}

/// nghttp2's error report: an invalid header field (NGHTTP2_ERR_HTTP_HEADER, "Invalid HTTP header field was
/// received": a connection-specific field, a bad pseudo-header) makes it reset the stream and decode the rest of
/// the block without callbacks. (A field it only ignores, "Ignoring received invalid …", leaves the callbacks on.)
let onSessionError: nghttp2_error_callback2 = { _, libErrorCode, message, length, userData in
    guard libErrorCode == NGHTTP2_ERR_HTTP_HEADER.rawValue, let message, length >= 7,
        memcmp(message, "Invalid", 7) == 0, let handler = handler(userData)
    else { return 0 }
    handler.stream(handler.headerBlockStreamID)?.headersIgnored = true
    return 0
}

let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, userData in
    handler(userData)?.streamClosed(streamID: streamID)
    return 0
}

let readResponseBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let handler = handler(userData) else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return handler.readBody(streamID: streamID, into: buffer, length: length, flags: flags)
}

/// The data source of a trickled body (``ConnectionFault/trickle(bytesPerChunk:intervalNanoseconds:)``).
let readPacedResponseBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let handler = handler(userData) else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return handler.readPacedBody(streamID: streamID, into: buffer, length: length, flags: flags)
}
