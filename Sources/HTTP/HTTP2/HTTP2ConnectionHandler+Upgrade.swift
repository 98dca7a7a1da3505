// APNs Sandbox — HTTP/2 on a connection that started as HTTP/1.1 (the h2c upgrade, RFC 7540 §3.2).
import CNGHTTP2

extension HTTP2ConnectionHandler {
    /// The HTTP/1.1 request that offered the upgrade, as it continues on stream 1: connection-specific
    /// fields already removed (``H2CUpgrade/upgradedRequest(from:body:)``), the body read whole.
    struct UpgradedRequest {
        var method: String
        var target: String
        var authority: String?
        var headers: HTTPFields
        var body: [UInt8]
    }

    /// Takes over a connection just answered `101 Switching Protocols`: the client's HTTP2-Settings count as
    /// its first SETTINGS frame (acknowledged by the 101, RFC 7540 §3.2.1), and the upgrade request becomes
    /// stream 1, half-closed (remote), answered over HTTP/2 after the server's SETTINGS. The client's
    /// connection preface is still expected first in the bytes that follow.
    /// - Returns: false when nghttp2 refuses the settings (they were validated before the 101: only a bug or
    ///   an allocation failure); the caller closes the connection.
    func takeOverUpgradedConnection(settingsPayload: [UInt8], request: UpgradedRequest) -> Bool {
        guard let session else { return false }
        let rc = settingsPayload.withUnsafeBufferPointer { payload in
            nghttp2_session_upgrade2(session, payload.baseAddress, payload.count, request.method == "HEAD" ? 1 : 0, nil)
        }
        guard rc == 0 else { return false }
        let stream = Stream(id: 1, startedAt: now)
        stream.method = request.method
        stream.path = request.target
        stream.scheme = "http"
        stream.authority = request.authority
        stream.headers = request.headers
        stream.body = request.body
        stream.requestEnded = true
        // Counted as HTTP/2 counts a header list (name + value + 32 per field, pseudo-headers included), so
        // the same SETTINGS_MAX_HEADER_LIST_SIZE applies as to a request sent over HTTP/2.
        let pseudo = [(":method", request.method), (":path", request.target), (":scheme", "http"),
                      (":authority", request.authority ?? "")]
        stream.headerBytes = (pseudo + request.headers.map { ($0.name, $0.value) }).reduce(0) {
            $0 + $1.0.utf8.count + $1.1.utf8.count + 32
        }
        stream.isHeaderListTooLarge = stream.headerBytes > pipeline.options.maxHeaderListSize
        streams[1] = stream
        nghttp2_session_set_stream_user_data(session, 1, Unmanaged.passUnretained(stream).toOpaque())
        connectionGuard.requestActivity(now: now)
        enqueue(stream)
        dispatchBacklog()
        send()
        return true
    }
}
