// APNs Sandbox — HTTP/2 responses: HEADERS from the response's fields, DATA from its body or a streaming writer.
import CNGHTTP2
import Transport

extension HTTP2ConnectionHandler {
    /// Submits `response` on `stream`: HEADERS only for an empty body, else with a data provider.
    /// The body counts as held output until nghttp2 takes it. A response complete while the request is
    /// still arriving is followed by RST_STREAM NO_ERROR (RFC 9113 §8.1). A response with a
    /// ``HTTPResponse/connectionFault`` is handed to ``carryOut(_:_:on:)`` instead (not on a streaming head).
    func submit(_ response: HTTPResponse, on stream: Stream) {
        guard let session, !stream.isClosed else { return }
        if let fault = response.connectionFault, stream.bodyWriter == nil {
            return carryOut(fault, response, on: stream)
        }
        submitFrames(session, response, on: stream)
    }

    /// HEADERS and, unless the body is empty (and the response not paced), a data provider: the paced one of a
    /// trickled response, else the plain one.
    func submitFrames(_ session: OpaquePointer, _ response: HTTPResponse, on stream: Stream, isPaced: Bool = false) {
        stream.awaitingResponse = false
        stream.lastDataAt = currentTime
        // One reused buffer holds every name and value; the nv array points into it. nghttp2
        // copies both during submit_response, so the buffer only has to live for the call.
        nvStorage.removeAll(keepingCapacity: true)
        nvRanges.removeAll(keepingCapacity: true)
        func add(_ name: String, _ value: String) {
            let nameStart = nvStorage.count
            nvStorage.append(contentsOf: name.utf8)
            let valueStart = nvStorage.count
            nvStorage.append(contentsOf: value.utf8)
            nvRanges.append(NameValueRange(
                nameStart: nameStart, nameLength: valueStart - nameStart,
                valueStart: valueStart, valueLength: nvStorage.count - valueStart))
        }
        add(":status", Self.statusText(response.status))
        for field in response.headers where !Self.isConnectionSpecific(field.name) {
            if field.value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) { continue }
            add(field.name, field.value)
        }
        if stream.bodyWriter == nil && !response.body.isEmpty && response.headers["content-length"] == nil {
            add("content-length", String(response.body.count))
        }
        let isBodiless = response.body.isEmpty || stream.method == "HEAD"
        let noBody = stream.bodyWriter == nil && isBodiless && !isPaced
        heldResponseBytes -= stream.responseBody.count - stream.responseOffset
        // (A streaming head's body is ignored: the writer's bytes are the body.)
        stream.responseBody = isBodiless || stream.bodyWriter != nil ? [] : response.body
        stream.responseOffset = 0
        heldResponseBytes += stream.responseBody.count
        if noBody && !stream.requestEnded { resetsAfterResponse.append(stream.id) }
        let ranges = nvRanges
        nvStorage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: ranges.count) { nva in
                guard let nvaBase = nva.baseAddress else { return }
                for (i, range) in ranges.enumerated() {
                    nva[i] = nghttp2_nv(
                        name: base + range.nameStart, value: base + range.valueStart,
                        namelen: range.nameLength, valuelen: range.valueLength,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
                }
                if noBody {
                    nghttp2_submit_response(session, stream.id, nvaBase, ranges.count, nil)
                } else {
                    var provider = nghttp2_data_provider(
                        source: nghttp2_data_source(ptr: nil), read_callback: isPaced ? readPacedResponseBody : readResponseBody)
                    nghttp2_submit_response(session, stream.id, nvaBase, ranges.count, &provider)
                }
            }
        }
    }

    struct NameValueRange {
        var nameStart: Int
        var nameLength: Int
        var valueStart: Int
        var valueLength: Int
    }

    private static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
        case 403: "403"
        case 404: "404"
        case 410: "410"
        case 413: "413"
        case 429: "429"
        case 500: "500"
        case 503: "503"
        default: String(status)
        }
    }

    private static func isConnectionSpecific(_ name: String) -> Bool {
        switch name {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": true
        default: false
        }
    }

    /// nghttp2's data source: the response body, or what a streaming writer has ready
    /// (`NGHTTP2_ERR_DEFERRED` until it has more; EOF once it finished).
    func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = stream(streamID) else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        if let writer = stream.bodyWriter, stream.responseOffset >= stream.responseBody.count {
            let (bytes, isFinished) = writer.take()
            stream.responseBody = bytes
            stream.responseOffset = 0
            heldResponseBytes += bytes.count
            if bytes.isEmpty {
                if isFinished {
                    flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                    if !stream.requestEnded { resetsAfterResponse.append(streamID) }
                    return 0
                }
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            }
        }
        let remaining = stream.responseBody.count - stream.responseOffset
        let n = min(remaining, length)
        if n > 0 {
            stream.lastDataAt = currentTime
            heldResponseBytes -= n
            stream.responseBody.withUnsafeBufferPointer { source in
                if let base = source.baseAddress {
                    buffer.update(from: base + stream.responseOffset, count: n)
                }
            }
            stream.responseOffset += n
        }
        if stream.responseOffset >= stream.responseBody.count {
            stream.responseBody = []
            stream.responseOffset = 0
            // A streaming body ends only when the producer finishes (the next read sees it).
            if stream.bodyWriter == nil {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                if !stream.requestEnded { resetsAfterResponse.append(streamID) }
            }
        }
        return n
    }
}
