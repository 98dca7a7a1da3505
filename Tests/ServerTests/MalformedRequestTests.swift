// APNs Sandbox — end to end: malformed HTTP/1.1 is refused with a JSON error and a close, and the server keeps serving.
import Foundation
import TestProcessSupport
import Testing

/// One malformed request sent over a raw cleartext connection.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var request: [UInt8]
    /// The expected status; nil accepts either a 400 or a close without any answer.
    var status: Int?
    var code: String?

    var testDescription: String { name }

    init(_ name: String, _ request: String, status: Int?, code: String?) {
        self.init(name, Array(request.utf8), status: status, code: code)
    }

    init(_ name: String, _ request: [UInt8], status: Int?, code: String?) {
        self.name = name
        self.request = request
        self.status = status
        self.code = code
    }

    static let post = "POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: x\r\napns-topic: com.example.app\r\n"
    /// Outside the APNs endpoint, whose oversized bodies get APNs' `PayloadTooLarge` instead.
    static let upload = "POST /upload HTTP/1.1\r\nHost: x\r\n"

    static let all: [MalformedCase] = [
        MalformedCase(
            "request smuggling: Content-Length with Transfer-Encoding",
            post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400, code: "bad_request"),
        MalformedCase(
            "two different Content-Length values",
            post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", status: 400, code: "bad_request"),
        MalformedCase(
            "obs-fold header continuation",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n", status: 400, code: "bad_request"),
        MalformedCase(
            "chunk size that is not hex",
            post + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", status: 400, code: "bad_request"),
        MalformedCase(
            "header section over maxHeaderBytes (20 KB header)",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n",
            status: 431, code: "headers_too_large"),
        MalformedCase(
            "more header fields than maxHeaderCount",
            "GET /healthz HTTP/1.1\r\nHost: x\r\n" + (0..<150).map { "X-H\($0): v\r\n" }.joined() + "\r\n",
            status: 431, code: "headers_too_large"),
        MalformedCase(
            "Content-Length body over maxBodyBytes (1024)",
            upload + "Content-Length: 2000\r\n\r\n" + String(repeating: "b", count: 2000), status: 413, code: "body_too_large"),
        MalformedCase(
            "chunked body over maxBodyBytes (1024)",
            upload + "Transfer-Encoding: chunked\r\n\r\n7d0\r\n" + String(repeating: "b", count: 2000) + "\r\n0\r\n\r\n",
            status: 413, code: "body_too_large"),
        MalformedCase(
            "garbage bytes", [0x00, 0x01, 0x02] + Array("garbage\r\n\r\n".utf8), status: nil, code: "bad_request"),
        MalformedCase(
            "request line over maxRequestLineBytes",
            "GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: x\r\n\r\n", status: 414,
            code: "request_line_too_long"),
        MalformedCase(
            "HTTP/3.0 in an HTTP/1 request line", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", status: 505,
            code: "http_version_not_supported"),
        MalformedCase(
            "HTTP/2.0 in an HTTP/1 request line", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", status: 505,
            code: "http_version_not_supported"),
        MalformedCase(
            "unsupported transfer coding", post + "Transfer-Encoding: gzip\r\n\r\n", status: 501, code: "not_implemented"),
        MalformedCase(
            "unsupported expectation", post + "Content-Length: 2\r\nExpect: 200-ok\r\n\r\n{}", status: 417,
            code: "expectation_failed"),
        MalformedCase("missing Host", "GET /healthz HTTP/1.1\r\n\r\n", status: 400, code: "bad_request"),
    ]
}

@Suite(.scaledTimeLimit(minutes: 1))
struct MalformedRequestTests {
    /// Each malformed request gets its status with a JSON `error.code`, the connection closes, and a new client is still served.
    @Test(arguments: MalformedCase.all)
    func malformedRequestIsRefusedAndServerKeepsServing(_ malformed: MalformedCase) async throws {
        try await withServer(configure: { $0.limits.maxBodyBytes = 1024 }) { server in
            let result = try await exchangeUntilClose(port: server.httpPort, malformed.request, timeout: 5)
            #expect(result.closed, "the server closes the connection after refusing (\(result.elapsed) s)")
            #expect(!result.reset, "an orderly close (FIN), not a reset")
            let responses = result.responses
            if let status = malformed.status {
                let response = try #require(responses.first, "no response, got: \(result.text.prefix(300))")
                #expect(responses.count == 1, "only the error response: \(result.text.prefix(500))")
                #expect(response.statusLine.hasPrefix("HTTP/1.1 \(status) "), "\(response.statusLine)")
                #expect(response.header("content-type") == "application/json")
                #expect(response.header("connection") == "close")
                #expect(errorCode(response.body) == malformed.code, "body: \(response.bodyText)")
            } else if let response = responses.first {
                #expect(response.status == 400, "\(response.statusLine)")
                #expect(errorCode(response.body) == malformed.code, "body: \(response.bodyText)")
            } else {
                #expect(result.bytes.isEmpty, "either a 400 or a close, got: \(result.text.prefix(300))")
            }

            let next = try await healthz(port: server.httpPort)
            #expect(next?.status == 200, "a fresh connection is still served")
            #expect(next?.bodyText == #"{"status":"ok"}"#)
        }
    }
}
