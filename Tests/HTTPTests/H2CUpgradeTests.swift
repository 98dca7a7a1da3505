// APNs Sandbox — the h2c upgrade rules as pure values: no sockets.
import Support
import Testing

@testable import HTTP

@Suite struct H2CUpgradeRuleTests {
    private func head(_ fields: [(String, String)], version: HTTPVersion = .http1_1, keepAlive: Bool = true,
                      target: String = "/healthz") -> HTTP1RequestHead {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(name, value) }
        return HTTP1RequestHead(method: "GET", target: target, version: version, headers: headers, keepAlive: keepAlive)
    }

    private let offer = [("Host", "h"), ("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"),
                         ("HTTP2-Settings", "AAMAAABkAAQCAAAAAAIAAAAA")]

    /// curl's offer is taken: the payload is its three settings (MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, ENABLE_PUSH).
    @Test func curlsOfferIsTaken() throws {
        let payload = try #require(H2CUpgrade.settingsPayload(offeredIn: head(offer)))
        #expect(payload == [0, 3, 0, 0, 0, 100, 0, 4, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0])
    }

    /// HTTP/1.0, `Connection: close`, a missing token in `Connection` or `Upgrade`, and not exactly one
    /// HTTP2-Settings field: no offer.
    @Test func offersThatCannotBeTaken() {
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(offer, version: .http1_0)) == nil)
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(offer, keepAlive: false)) == nil)
        let replacing = { (name: String, value: String?) -> [(String, String)] in
            self.offer.compactMap { $0.0 == name ? value.map { (name, $0) } : $0 }
        }
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(replacing("Connection", "Upgrade"))) == nil)
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(replacing("Connection", "HTTP2-Settings"))) == nil)
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(replacing("Upgrade", "h2"))) == nil)
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(replacing("HTTP2-Settings", nil))) == nil)
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(offer + [("HTTP2-Settings", "AAMAAABk")])) == nil)
        // Tokens are case-insensitive and may sit among others, in one field or several.
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(replacing("Upgrade", "websocket, H2C"))) != nil)
        #expect(H2CUpgrade.settingsPayload(offeredIn: head(
            replacing("Connection", "upgrade") + [("Connection", "keep-alive , http2-settings")])) != nil)
    }

    /// base64url only, with `=` padding where it belongs; a whole number of settings, at most 32; values in range.
    @Test func settingsValues() {
        #expect(H2CUpgrade.decodeSettings("AAMAAABk") == [0, 3, 0, 0, 0, 100])
        #expect(H2CUpgrade.decodeSettings("AAMAAABk==") == nil, "padding where none belongs")
        #expect(H2CUpgrade.decodeSettings("AAQAAP__") == [0, 4, 0, 0, 0xFF, 0xFF], "- and _ are base64url")
        #expect(H2CUpgrade.decodeSettings("AAQAAP//") == nil, "+ and / are base64, not base64url")
        #expect(H2CUpgrade.decodeSettings("") == nil)
        #expect(H2CUpgrade.decodeSettings("AAMAAA") == nil, "4 bytes: not a whole setting")
        #expect(H2CUpgrade.decodeSettings("AAIAAAAB") == [0, 2, 0, 0, 0, 1], "ENABLE_PUSH 1")
        #expect(H2CUpgrade.decodeSettings("AAIAAAAC") == nil, "ENABLE_PUSH 2")
        #expect(H2CUpgrade.decodeSettings("AAR_____") != nil, "INITIAL_WINDOW_SIZE 2^31-1")
        #expect(H2CUpgrade.decodeSettings("AASAAAAA") == nil, "INITIAL_WINDOW_SIZE 2^31")
        #expect(H2CUpgrade.decodeSettings("AAUAAEAA") != nil, "MAX_FRAME_SIZE 16384")
        #expect(H2CUpgrade.decodeSettings("AAUAAD__") == nil, "MAX_FRAME_SIZE 16383")
        #expect(H2CUpgrade.decodeSettings("AAUBAAAA") == nil, "MAX_FRAME_SIZE 2^24")
        #expect(H2CUpgrade.decodeSettings("AP8AAAAA") != nil, "an unknown setting is ignored")
        let thirtyTwo = String(repeating: "AAMAAABk", count: 32)
        #expect(H2CUpgrade.decodeSettings(thirtyTwo) != nil)
        #expect(H2CUpgrade.decodeSettings(thirtyTwo + "AAMAAABk") == nil, "33 settings")
    }

    /// Padded base64url (as Python's urlsafe_b64encode writes it) decodes like the unpadded form, with the
    /// shared decoder HTTP2-Settings uses.
    @Test func paddedBase64URL() {
        #expect(Base64URL.decode("AA") == [0])
        #expect(Base64URL.decode("AA==") == [0])
        #expect(Base64URL.decode("AAA=") == [0, 0])
        #expect(Base64URL.decode("AAA==") == nil)
        #expect(Base64URL.decode("A") == nil)
        #expect(Base64URL.decode("A===") == nil)
        #expect(Base64URL.decode("AA A") == nil)
    }

    /// Stream 1 gets the request without HTTP/1.1's connection-specific fields; `Host` (or an absolute
    /// target's authority) becomes `:authority`; `TE: trailers` stays.
    @Test func upgradedRequestDropsConnectionSpecificFields() {
        let request = H2CUpgrade.upgradedRequest(
            from: head(offer + [("Keep-Alive", "5"), ("Connection", "x-hop"), ("X-Hop", "1"), ("TE", "trailers"),
                                ("apns-topic", "com.example.app"), ("Content-Length", "2")]),
            body: [0x7B, 0x7D])
        #expect(request.authority == "h")
        #expect(request.target == "/healthz")
        #expect(request.headers.fields.map(\.name) == ["te", "apns-topic", "content-length"])
        #expect(request.body == [0x7B, 0x7D])
        let absolute = H2CUpgrade.upgradedRequest(from: head(offer, target: "http://api.push.apple.com/3/device/ab"), body: [])
        #expect(absolute.authority == "api.push.apple.com")
        #expect(absolute.target == "/3/device/ab")
        let teOther = H2CUpgrade.upgradedRequest(from: head(offer + [("TE", "gzip")]), body: [])
        #expect(!teOther.headers.contains("te"))
    }

    /// The parser hands over what follows a complete request (the client's HTTP/2 preface) and is empty after.
    @Test func parserHandsOverTheBytesAfterTheRequest() {
        var parser = HTTP1Parser()
        parser.append(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\nPRI * HTTP/2.0\r\n".utf8))
        guard case .request = parser.next() else {
            Issue.record("the request first")
            return
        }
        #expect(parser.takeUnparsedBytes() == Array("PRI * HTTP/2.0\r\n".utf8))
        #expect(parser.bufferedByteCount == 0)
    }
}
