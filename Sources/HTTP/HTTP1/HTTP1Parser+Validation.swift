// APNs Sandbox — the message-level rules of an HTTP/1.1 request head (RFC 9112): Host, framing, Connection, Expect.

extension HTTP1Parser {
    /// Applies the message-level rules (Host, framing, Connection, Expect) to a complete head.
    static func validate(
        _ line: (method: String, target: String, version: HTTPVersion), _ fields: HTTPFields, limits: HTTP1Limits
    ) throws(HTTP1ParseError) -> (HTTP1RequestHead, Framing) {
        let isHTTP11 = line.version == .http1_1
        var hostCount = 0
        var contentLength: Int?
        var transferEncodings: [String] = []
        var wantsClose = false
        var wantsKeepAlive = false
        var expectsContinue = false

        for field in fields {
            switch field.name {
            case "host":
                hostCount += 1
            case "content-length":
                guard let length = HTTP1Syntax.parseDecimal(field.value[...].utf8) else {
                    throw .badRequest("invalid Content-Length")
                }
                guard contentLength == nil || contentLength == length else {
                    throw .badRequest("conflicting Content-Length values")
                }
                contentLength = length
            case "transfer-encoding":
                transferEncodings.append(field.value)
            case "connection":
                try HTTP1Syntax.forEachListElement(field.value) { (option) throws(HTTP1ParseError) in
                    if HTTP1Syntax.equalsIgnoringCase(option, "close") { wantsClose = true }
                    if HTTP1Syntax.equalsIgnoringCase(option, "keep-alive") { wantsKeepAlive = true }
                }
            case "expect" where isHTTP11:
                // RFC 9110 §10.1.1: 100-continue is the only expectation; HTTP/1.0 ignores Expect.
                guard HTTP1Syntax.equalsIgnoringCase(HTTP1Syntax.trimmed(field.value[...]), "100-continue") else {
                    throw .expectationFailed
                }
                expectsContinue = true
            default:
                break
            }
        }

        if isHTTP11 ? hostCount != 1 : hostCount > 1 {
            throw .badRequest(hostCount == 0 ? "missing Host header" : "multiple Host headers")
        }

        let framing: Framing
        if !transferEncodings.isEmpty {
            guard contentLength == nil else { throw .badRequest("both Content-Length and Transfer-Encoding") }
            guard isHTTP11 else { throw .badRequest("Transfer-Encoding in an HTTP/1.0 request") }
            try validateTransferCodings(transferEncodings)
            framing = .chunked
        } else if let contentLength, contentLength > 0 {
            guard contentLength <= limits.maxBodyBytes else {
                var error = HTTP1ParseError.contentTooLarge
                error.head = HTTP1RequestHead(
                    method: line.method, target: line.target, version: line.version, headers: fields,
                    keepAlive: false, expectsContinue: expectsContinue)
                throw error
            }
            framing = .length(contentLength)
        } else {
            framing = .none
        }

        let head = HTTP1RequestHead(
            method: line.method, target: line.target, version: line.version, headers: fields,
            keepAlive: isHTTP11 ? !wantsClose : (wantsKeepAlive && !wantsClose),
            expectsContinue: expectsContinue
        )
        return (head, framing)
    }

    /// Accepts exactly one coding, `chunked`: any other coding is 501, empty or repeated ones 400.
    private static func validateTransferCodings(_ values: [String]) throws(HTTP1ParseError) {
        var chunkedCount = 0
        for value in values {
            try HTTP1Syntax.forEachListElement(value) { (coding) throws(HTTP1ParseError) in
                guard !coding.isEmpty else { throw .badRequest("empty transfer coding") }
                guard HTTP1Syntax.equalsIgnoringCase(coding, "chunked") else { throw .unsupportedTransferCoding }
                chunkedCount += 1
            }
        }
        guard chunkedCount == 1 else { throw .badRequest("chunked applied more than once") }
    }
}
