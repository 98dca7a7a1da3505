// APNs Sandbox — HTTP/1.1 parser: well-formed requests, framing, pipelining, keep-alive.

import Testing

@testable import HTTP

@Suite struct HTTP1ParserTests {
    /// The `keepAlive` of the first request parsed from `text`.
    private func keepAlive(_ text: String) -> Bool? {
        parseEvents(text).first?.request?.head.keepAlive
    }

    /// A minimal GET yields one request with lowercased headers and an empty body.
    @Test func parsesSimpleGet() throws {
        let events = parseEvents("GET /3/device/abc?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n")
        #expect(events.count == 1)
        let request = try #require(events.first?.request)
        #expect(request.head.method == "GET")
        #expect(request.head.target == "/3/device/abc?x=1")
        #expect(request.head.version == .http1_1)
        #expect(request.head.headers["host"] == "example.com")
        #expect(request.head.headers.fields.map(\.name) == ["host", "user-agent"])
        #expect(request.head.keepAlive)
        #expect(!request.head.expectsContinue)
        #expect(request.body.isEmpty)
    }

    /// Leading and trailing OWS is trimmed from field values; inner spaces stay.
    @Test func trimsFieldValueWhitespace() throws {
        let events = parseEvents("GET / HTTP/1.1\r\nHost:h\r\nX-A: \t a  b \t\r\nX-Empty:\r\n\r\n")
        let request = try #require(events.first?.request)
        #expect(request.head.headers["host"] == "h")
        #expect(request.head.headers["x-a"] == "a  b")
        #expect(request.head.headers["x-empty"] == "")
    }

    /// A Content-Length body is returned exactly, and the next request starts after it.
    @Test func parsesPostWithContentLength() throws {
        let events = parseEvents(
            "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: h\r\n\r\n"
        )
        #expect(events.count == 2)
        let post = try #require(events.first?.request)
        #expect(post.head.method == "POST")
        #expect(post.body == Array("hello".utf8))
        let get = try #require(events.last?.request)
        #expect(get.head.method == "GET")
    }

    /// Identical repeated Content-Length fields are accepted (RFC 9112 §6.3).
    @Test func acceptsRepeatedIdenticalContentLength() throws {
        let events = parseEvents("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
        #expect(try #require(events.first?.request).body == Array("abc".utf8))
    }

    /// Chunked bodies with extensions and trailers are reassembled; trailers are discarded.
    @Test func parsesChunkedBodyWithExtensionsAndTrailers() throws {
        let text = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n6 ; quoted=\"a b\"\r\n world\r\nA\r\n0123456789\r\n"
            + "0;last\r\nX-Trailer: yes\r\nX-Other: 1\r\n\r\n"
        let events = parseEvents(text)
        #expect(events.count == 1)
        let request = try #require(events.first?.request)
        #expect(request.body == Array("hello world0123456789".utf8))
        #expect(request.head.headers["x-trailer"] == nil)
    }

    /// Several requests in one buffer come out one by one, in order.
    @Test func parsesPipelinedRequestsInOrder() throws {
        var text = ""
        for index in 0..<10 { text += "GET /\(index) HTTP/1.1\r\nHost: h\r\n\r\n" }
        text += "POST /last HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        let events = parseEvents(text)
        #expect(events.compactMap { $0.request?.head.target } == (0..<10).map { "/\($0)" } + ["/last"])
        #expect(events.last?.request?.body == Array("abc".utf8))
    }

    /// Feeding a pipelined stream one byte at a time gives the same requests as one piece.
    @Test func parsesRequestsSplitByteByByte() throws {
        let text = "\r\nPOST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody"
            + "PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "2;x=y\r\nab\r\n1\r\nc\r\n0\r\nT: v\r\n\r\n"
            + "GET /c HTTP/1.0\r\n\r\n"
        var parser = HTTP1Parser()
        var events: [HTTP1ParseEvent] = []
        for byte in text.utf8 {
            parser.append([byte])
            events += parser.drain()
        }
        #expect(events == parseEvents(text))
        #expect(events.compactMap { $0.request?.head.target } == ["/a", "/b", "/c"])
        #expect(events[0].request?.body == Array("body".utf8))
        #expect(events[1].request?.body == Array("abc".utf8))
        #expect(parser.bufferedByteCount == 0)
        #expect(!parser.isMidRequest)
    }

    /// Raw-buffer appends work across compaction of a large stream of pipelined requests.
    @Test func survivesBufferCompaction() throws {
        let request = Array("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n".utf8)
            + [UInt8](repeating: 0x61, count: 100)
        let stream = (0..<200).flatMap { _ in request }
        var parser = HTTP1Parser()
        var count = 0
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + 777)
            stream[offset..<end].withUnsafeBytes { parser.append($0) }
            offset = end
            for event in parser.drain() {
                #expect(event.request?.body.count == 100)
                count += 1
            }
        }
        #expect(count == 200)
    }

    /// Empty lines before the request line are skipped (RFC 9112 §2.2).
    @Test func skipsLeadingEmptyLines() throws {
        let events = parseEvents("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try #require(events.first?.request).head.target == "/")
    }

    /// `isMidRequest` is true only while part of a request is buffered.
    @Test func reportsMidRequestState() {
        var parser = HTTP1Parser()
        #expect(!parser.isMidRequest)
        _ = parser.feed("GET / HT")
        #expect(parser.isMidRequest)
        _ = parser.feed("TP/1.1\r\nHost: h\r\n")
        #expect(parser.isMidRequest)
        #expect(parser.feed("\r\n").count == 1)
        #expect(!parser.isMidRequest)
        _ = parser.feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\na")
        #expect(parser.isMidRequest)
        #expect(parser.bufferedByteCount == 1)
    }

    /// `Expect: 100-continue` yields one `.expectContinue` while the body is missing, then the request.
    @Test func emitsExpectContinueOnce() throws {
        var parser = HTTP1Parser()
        let first = parser.feed("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n")
        #expect(first.count == 1)
        guard case .expectContinue(let head) = first.first else {
            Issue.record("expected .expectContinue, got \(first)")
            return
        }
        #expect(head.expectsContinue)
        #expect(parser.feed("ab").isEmpty)
        let rest = parser.feed("cd")
        #expect(rest.count == 1)
        #expect(try #require(rest.first?.request).body == Array("abcd".utf8))
    }

    /// No `.expectContinue` when the body arrived together with the head.
    @Test func skipsExpectContinueWhenBodyAlreadyArrived() {
        let events = parseEvents("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok")
        #expect(events.count == 1)
        #expect(events.first?.request?.head.expectsContinue == true)
    }

    /// Chunked bodies also get the `.expectContinue` event.
    @Test func emitsExpectContinueForChunkedBody() {
        var parser = HTTP1Parser()
        let events = parser.feed(
            "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        #expect(events.count == 1)
        if case .expectContinue = events.first {} else { Issue.record("expected .expectContinue, got \(events)") }
        #expect(parser.feed("1\r\nx\r\n0\r\n\r\n").first?.request?.body == [0x78])
    }

    /// HTTP/1.1 keeps the connection alive unless `Connection: close`.
    @Test func appliesHTTP11KeepAliveRules() {
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: h\r\n\r\n") == true)
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, CLOSE\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n") == true)
    }

    /// HTTP/1.0 closes unless `Connection: keep-alive`, and needs no Host.
    @Test func appliesHTTP10KeepAliveRules() {
        let plain = parseEvents("GET / HTTP/1.0\r\n\r\n").first?.request?.head
        #expect(plain?.version == .http1_0)
        #expect(plain?.keepAlive == false)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == true)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n") == false)
    }

    /// HTTP/1.0 ignores `Expect` entirely (RFC 9110 §10.1.1).
    @Test func ignoresExpectOnHTTP10() {
        let events = parseEvents("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n")
        #expect(events.first?.request?.head.expectsContinue == false)
        #expect(rejectionStatus("GET / HTTP/1.0\r\nExpect: nonsense\r\n\r\n") == nil)
    }

    /// A body of exactly `maxBodyBytes` is accepted, chunked or not.
    @Test func acceptsBodyAtLimit() {
        let limits = HTTP1Limits(maxBodyBytes: 4)
        let fixed = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nabcd"
        #expect(parseEvents(fixed, limits: limits).first?.request?.body == Array("abcd".utf8))
        let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"
        #expect(parseEvents(chunked, limits: limits).first?.request?.body == Array("abcd".utf8))
    }
}
