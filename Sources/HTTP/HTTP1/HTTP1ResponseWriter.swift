// APNs Sandbox — serializes responses as HTTP/1.1 bytes.

import Glibc
import Support
import Synchronization

/// Serializes `HTTPResponse`s onto an HTTP/1.1 connection.
///
/// The writer owns the framing headers: it always writes `content-length` (except for 1xx, 204
/// and 304), `connection` as `keepAlive` dictates, and `date` unless the response has one. The
/// response's own `content-length`, `transfer-encoding` and `connection` fields are dropped, as is
/// any field whose name is not a token or whose value contains CR, LF or NUL (response splitting).
public enum HTTP1ResponseWriter {
    /// Appends the status line, header fields and (unless HEAD or bodiless status) the body.
    ///
    /// The status line always says `HTTP/1.1` (RFC 9110 §6.2: the highest version we conform to).
    /// - Parameters:
    ///   - response: The response to send.
    ///   - version: The request's version; HTTP/1.0 keep-alive needs an explicit `connection: keep-alive`.
    ///   - keepAlive: Whether the connection stays open; false writes `connection: close`.
    ///   - isHeadRequest: Whether the request was HEAD: the body is omitted, `content-length` kept.
    ///   - buffer: The output buffer to append to.
    /// - Returns: How many of the bytes appended are the body (they come last).
    @discardableResult
    public static func write(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool, isHeadRequest: Bool,
        into buffer: inout [UInt8]
    ) -> Int {
        let status = (100...999).contains(response.status) ? response.status : 500
        let hasBody = !(100..<200).contains(status) && status != 204 && status != 304
        buffer.reserveCapacity(buffer.count + 128 + response.body.count)
        let framing: Framing
        if !hasBody {
            framing = .none
        } else if isHeadRequest, response.body.isEmpty, let declared = response.headers["content-length"],
            HTTP1Syntax.parseDecimal(declared[...].utf8) != nil
        {
            // A HEAD handler may state the length of the body a GET would have sent.
            framing = .declaredLength(declared)
        } else {
            framing = .contentLength(response.body.count)
        }
        writeHead(response, status: status, framing: framing, version: version, keepAlive: keepAlive, into: &buffer)
        guard hasBody, !isHeadRequest else { return 0 }
        buffer.append(contentsOf: response.body)
        return response.body.count
    }

    /// Appends the head of a streaming response: chunked for HTTP/1.1, else delimited by closing the
    /// connection (the caller must then close it when the body ends). The response's body is ignored.
    /// - Returns: Whether the body must be sent in chunks (``appendChunk(_:into:)``, ``appendLastChunk(into:)``).
    public static func writeStreamHead(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool, into buffer: inout [UInt8]
    ) -> Bool {
        let status = (200...999).contains(response.status) ? response.status : 500
        let chunked = version == .http1_1
        writeHead(
            response, status: status, framing: chunked ? .chunked : .none, version: version,
            keepAlive: chunked && keepAlive, into: &buffer)
        return chunked
    }

    /// Appends one chunk of a chunked body (nothing for empty `bytes`: that would end the body).
    public static func appendChunk(_ bytes: [UInt8], into buffer: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        buffer.append(contentsOf: String(bytes.count, radix: 16).utf8)
        appendCRLF(to: &buffer)
        buffer.append(contentsOf: bytes)
        appendCRLF(to: &buffer)
    }

    /// Appends the last chunk, ending a chunked body.
    public static func appendLastChunk(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "0\r\n\r\n".utf8)
    }

    private enum Framing {
        case none
        case contentLength(Int)
        case declaredLength(String)
        case chunked
    }

    private static func writeHead(
        _ response: HTTPResponse, status: Int, framing: Framing, version: HTTPVersion, keepAlive: Bool,
        into buffer: inout [UInt8]
    ) {
        buffer.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status, to: &buffer)
        buffer.append(HTTP1Syntax.sp)
        buffer.append(contentsOf: reasonPhrase(for: status).utf8)
        appendCRLF(to: &buffer)

        var hasDate = false
        for field in response.headers where isSafe(field) {
            switch field.name {
            case "content-length", "transfer-encoding", "connection":
                continue
            case "date":
                hasDate = true
            default:
                break
            }
            appendField(field.name, field.value, to: &buffer)
        }
        switch framing {
        case .none:
            break
        case .contentLength(let length):
            buffer.append(contentsOf: "content-length: ".utf8)
            appendDecimal(length, to: &buffer)
            appendCRLF(to: &buffer)
        case .declaredLength(let declared):
            appendField("content-length", declared, to: &buffer)
        case .chunked:
            appendField("transfer-encoding", "chunked", to: &buffer)
        }
        if !keepAlive {
            appendField("connection", "close", to: &buffer)
        } else if version == .http1_0 {
            appendField("connection", "keep-alive", to: &buffer)
        }
        if !hasDate {
            buffer.append(contentsOf: "date: ".utf8)
            buffer.append(contentsOf: HTTPDate.now())
            appendCRLF(to: &buffer)
        }
        appendCRLF(to: &buffer)
    }

    /// Appends the interim `HTTP/1.1 100 Continue` response.
    public static func writeContinue(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "HTTP/1.1 100 Continue\r\n\r\n".utf8)
    }

    /// The reason phrase of `status`: the IANA HTTP Status Code Registry's (RFC 9110 §15 and the RFCs it
    /// cites), or empty for an unregistered code (a reason phrase may be empty, RFC 9112 §4).
    public static func reasonPhrase(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 102: "Processing"
        case 103: "Early Hints"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 205: "Reset Content"
        case 206: "Partial Content"
        case 207: "Multi-Status"
        case 208: "Already Reported"
        case 226: "IM Used"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 305: "Use Proxy"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 423: "Locked"
        case 424: "Failed Dependency"
        case 425: "Too Early"
        case 426: "Upgrade Required"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 451: "Unavailable For Legal Reasons"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        case 506: "Variant Also Negotiates"
        case 507: "Insufficient Storage"
        case 508: "Loop Detected"
        case 511: "Network Authentication Required"
        default: ""
        }
    }

    // MARK: Helpers

    /// Whether the field can be written without breaking the message framing.
    private static func isSafe(_ field: HTTPFields.Field) -> Bool {
        !field.name.isEmpty && field.name.utf8.allSatisfy(HTTP1Syntax.isTokenChar)
            && field.value.utf8.allSatisfy(HTTP1Syntax.isFieldValueChar)
    }

    private static func appendField(_ name: String, _ value: String, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: name.utf8)
        buffer.append(HTTP1Syntax.colon)
        buffer.append(HTTP1Syntax.sp)
        buffer.append(contentsOf: value.utf8)
        appendCRLF(to: &buffer)
    }

    @inline(__always)
    private static func appendCRLF(to buffer: inout [UInt8]) {
        buffer.append(HTTP1Syntax.cr)
        buffer.append(HTTP1Syntax.lf)
    }

    /// Appends a non-negative integer in decimal without going through `String`.
    private static func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            buffer.append(UInt8(truncatingIfNeeded: rest / divisor) &+ 0x30)
            rest %= divisor
            divisor /= 10
        }
    }
}

/// The IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for the `date` header, formatted once per second.
enum HTTPDate {
    private struct Cached {
        var second: Int
        var bytes: [UInt8]
    }

    private static let cache = Locked(Cached(second: -1, bytes: []))

    /// The current time's IMF-fixdate as ASCII bytes; thread-safe.
    static func now() -> [UInt8] {
        let second = Int(WallClock.milliseconds() / 1000)
        return cache.withLock { cached in
            if cached.second != second {
                cached = Cached(second: second, bytes: Array(format(secondsSince1970: second).utf8))
            }
            return cached.bytes
        }
    }

    /// Formats a Unix time as an IMF-fixdate (RFC 9110 §5.6.7).
    static func format(secondsSince1970 seconds: Int) -> String {
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let time = UTCDateTime(secondsSince1970: Int64(seconds))
        let pad = UTCDateTime.padded
        return "\(weekdays[time.weekday]), \(pad(time.day, 2)) \(months[time.month - 1]) \(time.year) "
            + "\(pad(time.hour, 2)):\(pad(time.minute, 2)):\(pad(time.second, 2)) GMT"
    }
}
