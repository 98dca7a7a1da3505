// APNs Sandbox — HTTP/1.1 response serialization.

import Testing

@testable import HTTP

@Suite struct HTTP1ResponseWriterTests {
    /// Serializes and splits a response into its head lines and body.
    private func render(
        _ response: HTTPResponse, version: HTTPVersion = .http1_1, keepAlive: Bool = true, isHead: Bool = false
    ) -> (lines: [String], body: String) {
        var buffer: [UInt8] = []
        HTTP1ResponseWriter.write(
            response, version: version, keepAlive: keepAlive, isHeadRequest: isHead, into: &buffer
        )
        let text = String(decoding: buffer, as: UTF8.self)
        let parts = text.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false)
        let head = parts.first.map(String.init) ?? ""
        return (head.components(separatedBy: "\r\n"), parts.count > 1 ? String(parts[1]) : "")
    }

    /// The status line, headers, content-length, date and body are all written.
    @Test func writesStatusLineHeadersAndContentLength() throws {
        let response = HTTPResponse(status: 200, headers: ["apns-id": "abc"], body: Array("hello".utf8))
        let (lines, body) = render(response)
        #expect(lines.first == "HTTP/1.1 200 OK")
        #expect(lines.contains("apns-id: abc"))
        #expect(lines.contains("content-length: 5"))
        #expect(!lines.contains { $0.hasPrefix("connection:") })
        let date = try #require(lines.first { $0.hasPrefix("date: ") })
        #expect(date.hasSuffix(" GMT"))
        #expect(date.count == "date: Sun, 06 Nov 1994 08:49:37 GMT".count)
        #expect(body == "hello")
    }

    /// An empty body still gets `content-length: 0`.
    @Test func writesZeroContentLength() {
        #expect(render(HTTPResponse(status: 404)).lines.contains("content-length: 0"))
        #expect(render(HTTPResponse(status: 404)).lines.first == "HTTP/1.1 404 Not Found")
    }

    /// Closing connections say `connection: close`; HTTP/1.0 keep-alive says so explicitly.
    @Test func writesConnectionHeader() {
        #expect(render(HTTPResponse(status: 200), keepAlive: false).lines.contains("connection: close"))
        let ok = HTTPResponse(status: 200)
        #expect(render(ok, version: .http1_0, keepAlive: true).lines.contains("connection: keep-alive"))
        #expect(render(ok, version: .http1_0, keepAlive: false).lines.contains("connection: close"))
        #expect(!render(ok, version: .http1_1, keepAlive: true).lines.contains { $0.hasPrefix("connection") })
    }

    /// HEAD responses keep content-length but carry no body.
    @Test func omitsBodyForHead() {
        let (lines, body) = render(HTTPResponse(status: 200, body: Array("hello".utf8)), isHead: true)
        #expect(lines.contains("content-length: 5"))
        #expect(body.isEmpty)
        let declared = render(HTTPResponse(status: 200, headers: ["content-length": "42"]), isHead: true)
        #expect(declared.lines.contains("content-length: 42"))
    }

    /// 204, 304 and 1xx have neither body nor content-length.
    @Test func omitsContentLengthForBodilessStatuses() {
        for status in [101, 204, 304] {
            let (lines, body) = render(HTTPResponse(status: status, body: Array("x".utf8)))
            #expect(!lines.contains { $0.hasPrefix("content-length") })
            #expect(body.isEmpty)
        }
    }

    /// Framing headers from the handler are replaced and unsafe fields dropped.
    @Test func dropsUnsafeAndFramingHeaders() {
        let headers: HTTPFields = [
            "x-evil": "a\r\nset-cookie: b", "x-nul": "a\u{0}", "content-length": "99", "transfer-encoding": "chunked",
            "connection": "upgrade", "bad name": "v", "x-ok": "fine",
        ]
        let (lines, _) = render(HTTPResponse(status: 200, headers: headers, body: [1, 2]))
        #expect(lines.contains("x-ok: fine"))
        #expect(lines.contains("content-length: 2"))
        #expect(!lines.contains { $0.contains("set-cookie") || $0.hasPrefix("x-evil") || $0.hasPrefix("x-nul") })
        for prefix in ["transfer-encoding", "connection", "bad"] {
            #expect(!lines.contains { $0.hasPrefix(prefix) })
        }
    }

    /// Registered statuses get their IANA reason phrase (409 is `Conflict`, not "Unknown"); an
    /// unregistered code gets an empty one (the space after the code stays, RFC 9112 §4).
    @Test func writesReasonPhrases() {
        #expect(render(HTTPResponse(status: 431)).lines.first == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(render(HTTPResponse(status: 409)).lines.first == "HTTP/1.1 409 Conflict")
        #expect(render(HTTPResponse(status: 299)).lines.first == "HTTP/1.1 299 ")
    }

    /// Every status the server sends has a reason phrase.
    @Test(arguments: [
        200, 201, 202, 204, 206, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 406, 408, 409, 410, 411, 412,
        413, 414, 415, 416, 417, 421, 422, 425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505,
    ])
    func everyStatusHasAReasonPhrase(status: Int) {
        #expect(!HTTP1ResponseWriter.reasonPhrase(for: status).isEmpty)
    }

    /// `100 Continue` is the exact interim response.
    @Test func writesContinue() {
        var buffer: [UInt8] = []
        HTTP1ResponseWriter.writeContinue(into: &buffer)
        #expect(buffer == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
    }

    /// The date formatter produces IMF-fixdate for known instants.
    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(secondsSince1970: 951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate.format(secondsSince1970: 4_102_444_799) == "Thu, 31 Dec 2099 23:59:59 GMT")
    }

    /// A written response parses back with the same status and body.
    @Test func roundTripsThroughResponseBytes() {
        let (lines, body) = render(HTTPResponse(status: 400, body: Array("{\"reason\":\"BadDeviceToken\"}".utf8)))
        #expect(lines.first == "HTTP/1.1 400 Bad Request")
        #expect(lines.contains("content-length: \(body.utf8.count)"))
    }
}
