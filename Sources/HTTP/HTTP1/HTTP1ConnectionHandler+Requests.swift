// APNs Sandbox — HTTP/1.1 requests as handlers see them, and the answers to requests that cannot be parsed.
import Support
import Transport

extension HTTP1ConnectionHandler {
    func makeRequest(head: HTTP1RequestHead, body: [UInt8]) -> HTTPRequest {
        var headers = head.headers
        var authority = headers["host"]
        headers.set("host", nil)
        var target = head.target
        if let absolute = Self.absoluteForm(head.target) {
            // RFC 9112 §3.2.2: the target's authority wins over Host.
            target = absolute.pathAndQuery
            authority = absolute.authority
        }
        return HTTPRequest(
            method: head.method, target: target, authority: authority,
            scheme: connection.isTLS ? "https" : "http", version: head.version, headers: headers, body: body,
            connection: info)
    }

    /// Splits an absolute-form target (`http://host:port/path?query`, scheme case-insensitive) into its
    /// authority and origin form (`/path?query`, `/` when the path is empty); nil for other forms.
    static func absoluteForm(_ target: String) -> (authority: String, pathAndQuery: String)? {
        guard let first = target.utf8.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "*"),
              let schemeEnd = target.range(of: "://") else { return nil }
        let scheme = target[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = target[schemeEnd.upperBound...]
        let pathStart = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = String(rest[..<pathStart])
        guard !authority.isEmpty else { return nil }
        var pathAndQuery = String(rest[pathStart...])
        if let fragment = pathAndQuery.firstIndex(of: "#") { pathAndQuery = String(pathAndQuery[..<fragment]) }
        if !pathAndQuery.hasPrefix("/") { pathAndQuery = "/" + pathAndQuery }
        return (authority, pathAndQuery)
    }

    /// Answers a protocol error after the responses already queued, then closes.
    func fail(status: Int, message: String) {
        fail(with: .jsonError(status: status, code: Self.code(for: status), message: message))
    }

    func fail(with response: HTTPResponse) {
        lifecycle.lastRequestRead()
        let request = HTTPRequest(method: "GET", target: "/", version: .http1_1, connection: info)
        let exchange = Exchange(request: request, keepAlive: false, startedAt: MonotonicClock.nanoseconds())
        queue.append(exchange)
        setResponse(response, of: exchange)
        writeReadyResponses()
    }

    private static func code(for status: Int) -> String {
        switch status {
        case 408: "request_timeout"
        case 413: "body_too_large"
        case 414: "request_line_too_long"
        case 417: "expectation_failed"
        case 431: "headers_too_large"
        case 501: "not_implemented"
        case 505: "http_version_not_supported"
        default: "bad_request"
        }
    }
}
