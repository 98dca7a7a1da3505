// APNs Sandbox — HTTP/1.1 parser: everything that must be refused (no request smuggling).

import Testing

@testable import HTTP

@Suite struct HTTP1ParserRejectionTests {
    private static let post = "POST / HTTP/1.1\r\nHost: h\r\n"

    /// A continuation line (obs-fold) is 400.
    @Test func rejectsObsFold() {
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tb\r\n\r\n") == 400)
    }

    /// Content-Length together with Transfer-Encoding is 400.
    @Test func rejectsConflictingContentLengthAndTransferEncoding() {
        #expect(rejectionStatus(Self.post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n") == 400)
    }

    /// Differing Content-Length values, in separate fields, are 400.
    @Test func rejectsDuplicateDifferingContentLength() {
        #expect(rejectionStatus(Self.post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd") == 400)
    }

    /// Anything but one run of digits in Content-Length is 400.
    @Test(arguments: ["+5", "-1", "5, 5", "5 5", "0x5", "", "abc", "99999999999999999999999"])
    func rejectsMalformedContentLength(value: String) {
        #expect(rejectionStatus(Self.post + "Content-Length: \(value)\r\n\r\nhello") == 400)
    }

    /// A Content-Length over the body limit is 413 before any body byte arrives.
    @Test func rejectsContentLengthOverLimitImmediately() {
        #expect(rejectionStatus(Self.post + "Content-Length: 1048577\r\n\r\n") == 413)
    }

    /// A chunked body growing past the limit is 413 as soon as the chunk size says so.
    @Test func rejectsChunkedBodyOverLimit() {
        let limits = HTTP1Limits(maxBodyBytes: 10)
        let text = Self.post + "Transfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n3\r\n"
        #expect(rejectionStatus(text, limits: limits) == 413)
    }

    /// Codings other than one final `chunked` are refused.
    @Test func rejectsUnsupportedTransferCodings() {
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: gzip\r\n\r\n") == 501)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: gzip, chunked\r\n\r\n") == 501)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked, identity\r\n\r\n") == 501)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n") == 400)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked,\r\n\r\n") == 400)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding:\r\n\r\n") == 400)
    }

    /// Transfer-Encoding in an HTTP/1.0 request is 400.
    @Test func rejectsTransferEncodingOnHTTP10() {
        #expect(rejectionStatus("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
    }

    /// Chunk sizes that are empty, not hex, too long or followed by junk are 400.
    @Test(arguments: ["", "x", "-1", "+1", "0x5", "5 ", "5 x", "00000000000000005", "FFFFFFFFFFFFFFFF", "5;a\u{0}b"])
    func rejectsBadChunkSize(size: String) {
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n") == 400)
    }

    /// Chunk data must be followed by CRLF.
    @Test func rejectsMissingCRLFAfterChunk() {
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n") == 400)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\rX0\r\n\r\n") == 400)
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n") == 400)
    }

    /// Trailer fields follow header-field rules.
    @Test func rejectsMalformedTrailer() {
        #expect(rejectionStatus(Self.post + "Transfer-Encoding: chunked\r\n\r\n0\r\nBad Name: x\r\n\r\n") == 400)
    }

    /// A request line longer than the limit is 414, even before its CRLF arrives.
    @Test func rejectsOversizeRequestLine() {
        let limits = HTTP1Limits(maxRequestLineBytes: 64)
        let long = "GET /" + String(repeating: "a", count: 100)
        #expect(rejectionStatus(long, limits: limits) == 414)
        #expect(rejectionStatus(long + " HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits) == 414)
        let exact = "GET /" + String(repeating: "a", count: 64 - 14) + " HTTP/1.1"
        #expect(exact.utf8.count == 64)
        #expect(rejectionStatus(exact + "\r\nHost: h\r\n\r\n", limits: limits) == nil)
    }

    /// More header fields than the limit is 431.
    @Test func rejectsTooManyHeaders() {
        let limits = HTTP1Limits(maxHeaderCount: 5)
        let fields = (0..<5).map { "X-\($0): v\r\n" }.joined()
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\n" + fields + "\r\n", limits: limits) == 431)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\n" + fields.dropLast(7) + "\r\n", limits: limits) == nil)
    }

    /// A head larger than the limit is 431, even before its end arrives.
    @Test func rejectsOversizeHead() {
        let limits = HTTP1Limits(maxHeaderBytes: 256)
        let big = "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + String(repeating: "b", count: 300)
        #expect(rejectionStatus(big, limits: limits) == 431)
        let many = "GET / HTTP/1.1\r\nHost: h\r\n" + String(repeating: "X-Field: 0123456789\r\n", count: 20)
        #expect(rejectionStatus(many, limits: limits) == 431)
    }

    /// Only HTTP/1.0 and HTTP/1.1 are spoken; other versions are 505, malformed ones 400.
    @Test func rejectsUnsupportedVersion() {
        #expect(rejectionStatus("GET / HTTP/2.0\r\nHost: h\r\n\r\n") == 505)
        #expect(rejectionStatus("GET / HTTP/1.2\r\nHost: h\r\n\r\n") == 505)
        #expect(rejectionStatus("GET / HTTP/0.9\r\nHost: h\r\n\r\n") == 505)
        #expect(rejectionStatus("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == 505)
        #expect(rejectionStatus("GET / http/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1 \r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/11\r\nHost: h\r\n\r\n") == 400)
    }

    /// HTTP/1.1 needs exactly one Host; HTTP/1.0 at most one.
    @Test func rejectsMissingOrRepeatedHost() {
        #expect(rejectionStatus("GET / HTTP/1.1\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n") == 400)
    }

    /// Whitespace between a field name and its colon is 400.
    @Test func rejectsSpaceBeforeColon() {
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost : h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\nContent-Length\t: 0\r\n\r\n") == 400)
    }

    /// NUL and other control bytes in a field value are 400.
    @Test func rejectsControlCharactersInValue() {
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{0}b\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{7F}b\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{1B}b\r\n\r\n") == 400)
    }

    /// Bare CR or bare LF anywhere in the head is 400.
    @Test func rejectsBareLineEndings() {
        #expect(rejectionStatus("GET / HTTP/1.1\nHost: h\n\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nHost: h\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nX-A: a\rb\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }

    /// Malformed request lines and binary garbage are 400.
    @Test func rejectsGarbage() {
        #expect(rejectionStatus("\u{16}\u{3}\u{1}\u{0}\u{A5}\u{1}\u{0}\u{0}\r\n") == 400)
        #expect(rejectionStatus("GET  / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("G(T / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\n: empty-name\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET / HTTP/1.1\r\nNoColon\r\nHost: h\r\n\r\n") == 400)
        #expect(rejectionStatus("GET /\u{7F} HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }

    /// An Expect other than 100-continue is 417.
    @Test func rejectsUnknownExpectation() {
        #expect(rejectionStatus(Self.post + "Expect: 200-ok\r\nContent-Length: 1\r\n\r\nx") == 417)
    }

    /// After an error the parser stays failed, drops input and repeats the error.
    @Test func staysFailedAfterError() {
        var parser = HTTP1Parser()
        let events = parser.feed("GET / HTTP/9.9\r\n\r\n")
        guard case .error(let error) = events.last else {
            Issue.record("expected an error, got \(events)")
            return
        }
        #expect(error.status == 505)
        _ = parser.feed("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(parser.next() == .error(error))
        #expect(parser.hasFailed)
        #expect(parser.bufferedByteCount == 0)
        #expect(!parser.isMidRequest)
    }

    /// A stream of empty lines cannot hold the parser forever.
    @Test func rejectsEndlessEmptyLines() {
        #expect(rejectionStatus(String(repeating: "\r\n", count: 100)) == 400)
    }
}

@Suite struct HTTP1ParserOversizedHeadTests {
    /// A header section over the limit is 431 and carries the request line and the fields read so far, so
    /// the application can answer it in its own terms.
    @Test func headersTooLargeCarryTheRequestLine() throws {
        let limits = HTTP1Limits(maxHeaderBytes: 200)
        let events = parseEvents(
            "POST /3/device/ab HTTP/1.1\r\nHost: h\r\napns-id: x\r\nX-Big: \(String(repeating: "a", count: 300))\r\n\r\n",
            limits: limits)
        guard case .error(let error) = events.last else {
            Issue.record("expected an error: \(events)")
            return
        }
        #expect(error.status == 431)
        let head = try #require(error.head)
        #expect(head.method == "POST")
        #expect(head.target == "/3/device/ab")
        #expect(head.headers["apns-id"] == "x")
    }
}
