// APNs Sandbox — HTTP/1.1 to HTTP/2 on one connection: taking an h2c upgrade offer (RFC 7540 §3.2).
import Transport

extension HTTP1ConnectionHandler {
    /// The HTTP2-Settings payload when `head` offers an h2c upgrade this connection can take now: cleartext
    /// (RFC 7540 §3.3), no earlier request still being answered, not shutting down.
    func acceptableUpgrade(_ head: HTTP1RequestHead) -> [UInt8]? {
        guard !connection.isTLS, queue.isEmpty, lifecycle.mayUpgrade else { return nil }
        return H2CUpgrade.settingsPayload(offeredIn: head)
    }

    /// Answers `101 Switching Protocols` and hands the connection to HTTP/2: the request becomes stream 1, bytes
    /// after it (the client's connection preface, if it sent it already) go to the new handler.
    func switchToHTTP2(head: HTTP1RequestHead, body: [UInt8], settings: [UInt8]) {
        withExtendedLifetime(self) {
            lifecycle.switchedProtocols()
            midRequestSince = nil
            output.append(contentsOf: H2CUpgrade.switchingProtocols)
            connection.write(output)
            output.removeAll()
            let rest = parser.takeUnparsedBytes()
            connection.setReadingPaused(false)
            let http2 = HTTP2ConnectionHandler(connection: connection, pipeline: pipeline, info: info)
            connection.handler = http2
            guard http2.takeOverUpgradedConnection(
                settingsPayload: settings, request: H2CUpgrade.upgradedRequest(from: head, body: body))
            else {
                connection.close()
                return
            }
            if !rest.isEmpty { rest.withUnsafeBytes { http2.connectionDidReceive(connection, bytes: $0) } }
        }
    }
}
