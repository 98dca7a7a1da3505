// APNs Sandbox — incremental, strict HTTP/1.1 request parser (RFC 9112).

/// An incremental, strict HTTP/1.1 request parser.
///
/// ### Overview
/// Append bytes as they arrive with `append(_:)`, then call `next()` until it returns
/// `.needMoreData`; pipelined requests come out one at a time, in order. After `.error` the parser
/// is dead: it drops further input and keeps returning the same error.
///
/// The parser refuses anything ambiguous that could smuggle a request past a proxy: bare CR or
/// LF, obs-fold, whitespace before a colon, Content-Length together with Transfer-Encoding,
/// differing or malformed Content-Lengths, transfer codings other than a single final `chunked`.
///
/// ### Implementation
/// Bytes live in one `[UInt8]` with a read index; consumed bytes are compacted lazily, on
/// `append`, only once they are most of the buffer. Each complete line is parsed as soon as its
/// CRLF arrives and then consumed, so a byte is scanned once even when input arrives byte by byte.
/// Strings are built only for the method, target and fields.
///
/// A value type with no thread affinity; confine each instance to its connection.
public struct HTTP1Parser {
    /// Where the parser is in the current request.
    private enum Phase {
        case head
        case fixedBody(HTTP1RequestHead, length: Int)
        case chunked(HTTP1RequestHead, Chunked)
        case failed(HTTP1ParseError)
    }

    /// Where the parser is in a chunked body.
    private enum Chunked {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers
    }

    /// How the body of a request is framed.
    enum Framing {
        case none
        case length(Int)
        case chunked
    }

    /// Empty lines tolerated before a request line (RFC 9112 §2.2 allows "at least one").
    private static let maxLeadingEmptyLines = 16
    /// The longest chunk-size line (size plus extensions).
    private static let maxChunkLineBytes = 4096
    /// Consumed bytes are compacted away once there are at least this many (and they are half the buffer).
    private static let compactionThreshold = 4096
    /// An emptied buffer keeps its allocation up to this capacity.
    private static let retainedCapacity = 64 * 1024

    public let limits: HTTP1Limits

    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Bytes after `readIndex` already known not to hold the current line's CRLF.
    private var scanned = 0
    private var phase = Phase.head

    // The head being read.
    private var requestLine: (method: String, target: String, version: HTTPVersion)?
    private var fields = HTTPFields()
    private var headBytes = 0
    private var leadingEmptyLines = 0

    // The body being read.
    private var body: [UInt8] = []
    private var trailerBytes = 0
    private var trailerCount = 0
    private var continueEmitted = false

    public init(limits: HTTP1Limits = HTTP1Limits()) {
        self.limits = limits
    }

    /// Bytes held and not yet returned: unparsed input plus a partially received chunked body.
    public var bufferedByteCount: Int { buffer.count - readIndex + body.count }

    /// Whether part of a request has arrived but not all of it (for slow-request timeouts).
    public var isMidRequest: Bool {
        switch phase {
        case .head: return requestLine != nil || readIndex < buffer.count
        case .fixedBody, .chunked: return true
        case .failed: return false
        }
    }

    /// Whether the parser has failed and will only return `.error`.
    public var hasFailed: Bool {
        if case .failed = phase { return true }
        return false
    }

    /// Buffers `bytes` for parsing. Ignored once the parser has failed.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !hasFailed else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Buffers `bytes` for parsing. Ignored once the parser has failed.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard !hasFailed else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Parses as far as the buffered bytes allow and reports the next event.
    public mutating func next() -> HTTP1ParseEvent {
        do throws(HTTP1ParseError) {
            return try advance()
        } catch {
            var error = error
            if error.status == 431, error.head == nil {
                // The application may answer in its own terms (APNs: `{"reason":…}` with an apns-id):
                // give it what was read of the request.
                if let line = requestLine {
                    error.head = HTTP1RequestHead(
                        method: line.method, target: line.target, version: line.version, headers: fields, keepAlive: false)
                } else if case .chunked(let head, _) = phase {
                    error.head = head
                }
            }
            phase = .failed(error)
            buffer = []
            readIndex = 0
            scanned = 0
            body = []
            return .error(error)
        }
    }

    /// Hands over the bytes after the last request returned and empties the parser: for a connection that
    /// switches protocols after that request (an h2c upgrade), whose following bytes are not HTTP/1.1.
    /// Call only right after ``next()`` returned `.request` (nothing of a next request is parsed then).
    public mutating func takeUnparsedBytes() -> [UInt8] {
        let rest = readIndex < buffer.count ? Array(buffer[readIndex...]) : []
        buffer = []
        readIndex = 0
        scanned = 0
        return rest
    }

    // MARK: State machine

    private mutating func advance() throws(HTTP1ParseError) -> HTTP1ParseEvent {
        while true {
            switch phase {
            case .failed(let error):
                return .error(error)

            case .head:
                guard let (head, framing) = try readHead() else { return .needMoreData }
                continueEmitted = false
                switch framing {
                case .none: return .request(head, body: [])
                case .length(let length): phase = .fixedBody(head, length: length)
                case .chunked: phase = .chunked(head, .size)
                }

            case .fixedBody(let head, let length):
                guard buffer.count - readIndex >= length else { return waitForBody(head) }
                let bodyBytes = Array(buffer[readIndex..<(readIndex + length)])
                readIndex += length
                phase = .head
                return .request(head, body: bodyBytes)

            case .chunked(let head, let state):
                if let event = try readChunked(head, state) { return event }
            }
        }
    }

    /// `.expectContinue` the first time a body is found incomplete, `.needMoreData` after that.
    private mutating func waitForBody(_ head: HTTP1RequestHead) -> HTTP1ParseEvent {
        guard head.expectsContinue, !continueEmitted else { return .needMoreData }
        continueEmitted = true
        return .expectContinue(head)
    }

    /// Scans for the current line's CRLF; returns the line's range and consumes it (CRLF included).
    private mutating func readLine(maxLength: Int, tooLong: HTTP1ParseError) throws(HTTP1ParseError) -> Range<Int>? {
        let start = readIndex
        let scanned = self.scanned
        let result = buffer.withUnsafeBufferPointer {
            HTTP1Syntax.scanLine($0, from: start, scanned: scanned, maxLength: maxLength)
        }
        switch result {
        case .line(let length):
            readIndex = start + length + 2
            self.scanned = 0
            return start..<(start + length)
        case .incomplete(let scanned):
            self.scanned = scanned
            return nil
        case .tooLong:
            throw tooLong
        case .bareCarriageReturn:
            throw .badRequest("bare CR in request")
        case .bareLineFeed:
            throw .badRequest("bare LF in request")
        }
    }

    // MARK: Head

    /// Reads field lines until the empty line; nil when more bytes are needed.
    private mutating func readHead() throws(HTTP1ParseError) -> (HTTP1RequestHead, Framing)? {
        while true {
            guard let requestLine else {
                guard let line = try readLine(maxLength: limits.maxRequestLineBytes, tooLong: .uriTooLong) else {
                    return nil
                }
                if line.isEmpty {
                    leadingEmptyLines += 1
                    guard leadingEmptyLines <= Self.maxLeadingEmptyLines else {
                        throw .badRequest("too many empty lines before request line")
                    }
                    continue
                }
                self.requestLine = try buffer.withUnsafeBufferPointer { (bytes) throws(HTTP1ParseError) in
                    try HTTP1Syntax.parseRequestLine(UnsafeBufferPointer(rebasing: bytes[line]))
                }
                headBytes = line.count + 2
                continue
            }
            let budget = limits.maxHeaderBytes - headBytes - 2
            guard let line = try readLine(maxLength: budget, tooLong: .headerFieldsTooLarge) else { return nil }
            headBytes += line.count + 2
            if line.isEmpty {
                let fields = self.fields
                self.requestLine = nil
                self.fields = HTTPFields()
                headBytes = 0
                leadingEmptyLines = 0
                return try Self.validate(requestLine, fields, limits: limits)
            }
            guard fields.count < limits.maxHeaderCount else { throw .headerFieldsTooLarge }
            let (name, value) = try buffer.withUnsafeBufferPointer { (bytes) throws(HTTP1ParseError) in
                let lineBytes = UnsafeBufferPointer(rebasing: bytes[line])
                let bounds = try HTTP1Syntax.parseFieldLine(lineBytes)
                return (
                    HTTP1Syntax.string(lineBytes, 0..<bounds.nameEnd),
                    HTTP1Syntax.string(lineBytes, bounds.value)
                )
            }
            fields.append(name, value)
        }
    }

    // MARK: Chunked body

    /// Advances through a chunked body; returns an event, or nil to re-enter the state machine.
    private mutating func readChunked(
        _ head: HTTP1RequestHead, _ state: Chunked
    ) throws(HTTP1ParseError) -> HTTP1ParseEvent? {
        switch state {
        case .size:
            let tooLong = HTTP1ParseError.badRequest("chunk size line too long")
            guard let line = try readLine(maxLength: Self.maxChunkLineBytes, tooLong: tooLong) else {
                return waitForBody(head)
            }
            let size = try buffer.withUnsafeBufferPointer { (bytes) throws(HTTP1ParseError) in
                try HTTP1Syntax.parseChunkSize(UnsafeBufferPointer(rebasing: bytes[line]))
            }
            if size == 0 {
                trailerBytes = 0
                trailerCount = 0
                phase = .chunked(head, .trailers)
            } else {
                guard size <= limits.maxBodyBytes - body.count else {
                    var error = HTTP1ParseError.contentTooLarge
                    error.head = head
                    throw error
                }
                phase = .chunked(head, .data(remaining: size))
            }
            return nil

        case .data(let remaining):
            let count = min(buffer.count - readIndex, remaining)
            guard count > 0 else { return waitForBody(head) }
            body.append(contentsOf: buffer[readIndex..<(readIndex + count)])
            readIndex += count
            phase = .chunked(head, count == remaining ? .dataEnd : .data(remaining: remaining - count))
            return nil

        case .dataEnd:
            let available = buffer.count - readIndex
            if available >= 1, buffer[readIndex] != HTTP1Syntax.cr {
                throw .badRequest("missing CRLF after chunk data")
            }
            guard available >= 2 else { return waitForBody(head) }
            guard buffer[readIndex + 1] == HTTP1Syntax.lf else { throw .badRequest("missing CRLF after chunk data") }
            readIndex += 2
            phase = .chunked(head, .size)
            return nil

        case .trailers:
            let budget = limits.maxHeaderBytes - trailerBytes - 2
            guard let line = try readLine(maxLength: budget, tooLong: .headerFieldsTooLarge) else {
                return waitForBody(head)
            }
            trailerBytes += line.count + 2
            guard !line.isEmpty else {
                var complete: [UInt8] = []
                swap(&complete, &body)
                phase = .head
                return .request(head, body: complete)
            }
            guard trailerCount < limits.maxHeaderCount else { throw .headerFieldsTooLarge }
            trailerCount += 1
            // Trailer fields are validated like header fields, then discarded.
            _ = try buffer.withUnsafeBufferPointer { (bytes) throws(HTTP1ParseError) in
                try HTTP1Syntax.parseFieldLine(UnsafeBufferPointer(rebasing: bytes[line]))
            }
            return nil
        }
    }

    // MARK: Buffer

    /// Drops consumed bytes when that is cheap relative to the work already done.
    private mutating func compact() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            if buffer.capacity > Self.retainedCapacity {
                buffer = []
            } else {
                buffer.removeAll(keepingCapacity: true)
            }
            readIndex = 0
        } else if readIndex >= Self.compactionThreshold, readIndex * 2 >= buffer.count {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
