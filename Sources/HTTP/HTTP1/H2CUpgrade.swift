// APNs Sandbox — the HTTP/1.1 Upgrade to cleartext HTTP/2 (h2c, RFC 7540 §3.2): when an offer can be taken.
import Support

/// The rules of an h2c upgrade offer (`curl --http2 http://…`, `nghttp -u`), as pure functions.
///
/// An offer is taken only when all of these hold (else the request is answered over HTTP/1.1 as if
/// there were no offer):
/// - an HTTP/1.1 request that keeps the connection open (RFC 9110 §7.8: HTTP/1.0 upgrades are ignored);
/// - `Upgrade` lists `h2c`, and `Connection` lists both `Upgrade` and `HTTP2-Settings` (RFC 7540 §3.2.1);
/// - exactly one `HTTP2-Settings` field, whose value is base64url (RFC 4648 §5, padding optional) of a
///   valid SETTINGS payload: a whole number of 6-byte settings, at most ``maxSettings`` of them, each
///   value in its range (RFC 9113 §6.5.2: ENABLE_PUSH 0 or 1, INITIAL_WINDOW_SIZE up to 2^31-1,
///   MAX_FRAME_SIZE 16384…16777215; the same checks as nghttp2's, which otherwise would take the offer
///   and then end the connection with a protocol error).
///
/// The connection-level conditions (cleartext only, RFC 7540 §3.3; no earlier request still being
/// answered; not shutting down) are the connection handler's. The request's body has been read whole
/// before the offer is looked at (the parser returns complete requests), as RFC 7540 §3.2 requires, and
/// within the usual limits (`maxBodyBytes`: a larger one is answered 413 over HTTP/1.1).
enum H2CUpgrade {
    /// The most settings an HTTP2-Settings value may carry (nghttp2's limit is set to the same).
    static let maxSettings = 32

    /// What the server answers before its HTTP/2 connection preface.
    static let switchingProtocols = Array("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".utf8)

    /// The decoded SETTINGS payload of an offer that can be taken, nil when there is none or it is unusable.
    static func settingsPayload(offeredIn head: HTTP1RequestHead) -> [UInt8]? {
        guard head.version == .http1_1, head.keepAlive else { return nil }
        guard listContains(head.headers.values(for: "upgrade"), "h2c") else { return nil }
        let connection = head.headers.values(for: "connection")
        guard listContains(connection, "upgrade"), listContains(connection, "http2-settings") else { return nil }
        let settings = head.headers.values(for: "http2-settings")
        guard settings.count == 1 else { return nil }
        return decodeSettings(settings[0])
    }

    /// `value` as a SETTINGS payload: base64url decoded and validated; nil if it is not one.
    static func decodeSettings(_ value: String) -> [UInt8]? {
        guard !value.isEmpty, let payload = Base64URL.decode(value), payload.count % 6 == 0, payload.count / 6 <= maxSettings
        else { return nil }
        var index = 0
        while index < payload.count {
            let id = UInt16(payload[index]) << 8 | UInt16(payload[index + 1])
            let setting = payload[(index + 2)..<(index + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch id {
            case 0x2, 0x8, 0x9:  // ENABLE_PUSH, ENABLE_CONNECT_PROTOCOL, NO_RFC7540_PRIORITIES
                guard setting <= 1 else { return nil }
            case 0x4:  // INITIAL_WINDOW_SIZE
                guard setting <= 0x7FFF_FFFF else { return nil }
            case 0x5:  // MAX_FRAME_SIZE
                guard (16_384...16_777_215).contains(setting) else { return nil }
            default:  // HEADER_TABLE_SIZE, MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_SIZE, unknown: any value
                break
            }
            index += 6
        }
        return payload
    }

    /// Whether any of the comma-separated `values` has an element equal to `token` (lowercase), ignoring case.
    private static func listContains(_ values: [String], _ token: String) -> Bool {
        values.contains { value in
            value.split(separator: ",", omittingEmptySubsequences: true).contains {
                HTTP1Syntax.equalsIgnoringCase(HTTP1Syntax.trimmed($0), token)
            }
        }
    }

    /// The upgrade request as stream 1 of the new HTTP/2 connection: the target's authority (absolute form)
    /// or `Host` as `:authority`, and none of the connection-specific fields HTTP/2 forbids (RFC 9113
    /// §8.2.2): `Connection` and the fields it names, `Upgrade`, `HTTP2-Settings`, `Keep-Alive`,
    /// `Proxy-Connection`, `Transfer-Encoding`, `TE` other than `trailers`, and `Host` itself.
    static func upgradedRequest(from head: HTTP1RequestHead, body: [UInt8]) -> HTTP2ConnectionHandler.UpgradedRequest {
        var named: Set<String> = ["connection", "upgrade", "http2-settings", "keep-alive", "proxy-connection",
                                  "transfer-encoding", "host"]
        for value in head.headers.values(for: "connection") {
            for option in value.split(separator: ",") { named.insert(HTTP1Syntax.trimmed(option).lowercased()) }
        }
        var headers = HTTPFields()
        for field in head.headers where !named.contains(field.name) {
            if field.name == "te" && !HTTP1Syntax.equalsIgnoringCase(HTTP1Syntax.trimmed(field.value[...]), "trailers") {
                continue
            }
            headers.appendLowercased(field.name, field.value)
        }
        var target = head.target
        var authority = head.headers["host"]
        if let absolute = HTTP1ConnectionHandler.absoluteForm(head.target) {
            target = absolute.pathAndQuery
            authority = absolute.authority
        }
        return HTTP2ConnectionHandler.UpgradedRequest(
            method: head.method, target: target, authority: authority, headers: headers, body: body)
    }
}
