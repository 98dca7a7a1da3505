// APNs Sandbox — byte-level HTTP/1.1 grammar (RFC 9112) used by `HTTP1Parser`.
import Support

/// Byte-level HTTP/1.1 grammar: line scanning, request line, field lines, chunk sizes.
///
/// Everything works on `UnsafeBufferPointer<UInt8>` views of the parser's buffer with plain index
/// arithmetic, and builds `String`s only for the finished pieces. All functions are pure.
enum HTTP1Syntax {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let ht: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B

    /// `tchar` (RFC 9110 §5.6.2) as a bitmask: bit `b` set for bytes `0..<64`, then `64..<128`.
    private static let tokenMaskLow: UInt64 = 0x03ff_6cfa_0000_0000
    private static let tokenMaskHigh: UInt64 = 0x57ff_ffff_c7ff_fffe

    /// Whether `byte` is a `tchar`.
    @inline(__always)
    static func isTokenChar(_ byte: UInt8) -> Bool {
        if byte < 64 { return (tokenMaskLow >> UInt64(byte)) & 1 == 1 }
        if byte < 128 { return (tokenMaskHigh >> UInt64(byte &- 64)) & 1 == 1 }
        return false
    }

    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == sp || byte == ht }

    /// Field-value bytes: HTAB, SP, VCHAR and obs-text. NUL, CR, LF, other controls and DEL are not.
    @inline(__always)
    static func isFieldValueChar(_ byte: UInt8) -> Bool { byte >= 0x20 ? byte != 0x7F : byte == ht }

    // MARK: Lines

    /// The outcome of looking for the CRLF that ends a line.
    enum LineScan: Equatable {
        /// A complete line of `length` bytes (CRLF not included) starts at the scan start.
        case line(length: Int)
        /// No line end yet; `scanned` bytes are known not to contain one (resume from there).
        case incomplete(scanned: Int)
        /// More than `maxLength` bytes without a line end.
        case tooLong
        /// A CR not followed by LF.
        case bareCarriageReturn
        /// An LF not preceded by CR.
        case bareLineFeed
    }

    /// Looks for the CRLF ending the line that begins at `start`, resuming after `scanned` bytes.
    static func scanLine(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, scanned: Int, maxLength: Int
    ) -> LineScan {
        let end = bytes.count
        let limit = min(end, start + max(maxLength, -1) + 1)
        var index = start + scanned
        while index < limit {
            let byte = bytes[index]
            if byte > cr || (byte != cr && byte != lf) {
                index += 1
                continue
            }
            if byte == lf { return .bareLineFeed }
            if index + 1 == end { return .incomplete(scanned: index - start) }
            return bytes[index + 1] == lf ? .line(length: index - start) : .bareCarriageReturn
        }
        if index - start > maxLength { return .tooLong }
        return .incomplete(scanned: index - start)
    }

    // MARK: Request line

    /// Parses `method SP request-target SP HTTP-version` (the line without its CRLF).
    static func parseRequestLine(
        _ line: UnsafeBufferPointer<UInt8>
    ) throws(HTTP1ParseError) -> (method: String, target: String, version: HTTPVersion) {
        let count = line.count
        var index = 0
        while index < count, isTokenChar(line[index]) { index += 1 }
        guard index > 0, index < count, line[index] == sp else {
            throw .badRequest("malformed request method")
        }
        let methodEnd = index
        index += 1
        let targetStart = index
        while index < count, line[index] > sp, line[index] < 0x7F { index += 1 }
        guard index > targetStart, index < count, line[index] == sp else {
            throw .badRequest("malformed request target")
        }
        let targetEnd = index
        let version = try parseVersion(UnsafeBufferPointer(rebasing: line[(index + 1)...]))
        return (
            string(line, 0..<methodEnd),
            string(line, targetStart..<targetEnd),
            version
        )
    }

    /// `HTTP/1.0` or `HTTP/1.1`; another well-formed `HTTP/d.d` is 505, anything else 400.
    private static func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) throws(HTTP1ParseError) -> HTTPVersion {
        // "HTTP/" DIGIT "." DIGIT
        guard bytes.count == 8, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50,
            bytes[4] == 0x2F,
            isDigit(bytes[5]), bytes[6] == 0x2E, isDigit(bytes[7])
        else { throw .badRequest("malformed HTTP version") }
        switch (bytes[5], bytes[7]) {
        case (0x31, 0x31): return .http1_1
        case (0x31, 0x30): return .http1_0
        default: throw .versionNotSupported
        }
    }

    // MARK: Field lines

    /// The parts of a field line: `name` is `0..<nameEnd`, the OWS-trimmed value is `value`.
    struct FieldBounds {
        var nameEnd: Int
        var value: Range<Int>
    }

    /// Validates `field-name ":" OWS field-value OWS` (the line without its CRLF).
    static func parseFieldLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1ParseError) -> FieldBounds {
        let count = line.count
        guard count > 0, !isWhitespace(line[0]) else { throw .badRequest("obsolete line folding") }
        var index = 0
        while index < count, isTokenChar(line[index]) { index += 1 }
        guard index < count, line[index] == colon else {
            if index < count, isWhitespace(line[index]) {
                throw .badRequest("whitespace between header field name and colon")
            }
            throw .badRequest("malformed header field name")
        }
        guard index > 0 else { throw .badRequest("empty header field name") }
        let nameEnd = index
        var valueStart = index + 1
        while valueStart < count, isWhitespace(line[valueStart]) { valueStart += 1 }
        var valueEnd = count
        while valueEnd > valueStart, isWhitespace(line[valueEnd - 1]) { valueEnd -= 1 }
        for position in valueStart..<valueEnd where !isFieldValueChar(line[position]) {
            throw .badRequest("invalid character in header field value")
        }
        return FieldBounds(nameEnd: nameEnd, value: valueStart..<valueEnd)
    }

    // MARK: Chunked coding

    /// The most hex digits a chunk size may have.
    static let maxChunkSizeDigits = 16

    /// Parses `chunk-size [ chunk-ext ]` (the line without its CRLF); extensions are ignored.
    static func parseChunkSize(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1ParseError) -> Int {
        let count = line.count
        var index = 0
        var size = 0
        while index < count, let digit = Hex.digitValue(line[index]).map(Int.init) {
            guard index < maxChunkSizeDigits, size <= (Int.max >> 4) else {
                throw .badRequest("chunk size too large")
            }
            size = size << 4 | digit
            index += 1
        }
        guard index > 0 else { throw .badRequest("invalid chunk size") }
        guard index < count else { return size }
        // chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
        var extStart = index
        while extStart < count, isWhitespace(line[extStart]) { extStart += 1 }
        guard extStart < count, line[extStart] == semicolon else { throw .badRequest("invalid chunk size") }
        for position in extStart..<count where !isFieldValueChar(line[position]) {
            throw .badRequest("invalid character in chunk extension")
        }
        return size
    }

    // MARK: Helpers

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    @inline(__always)

    /// `1*DIGIT` as a non-negative `Int`; nil when empty, not all digits, or overflowing.
    static func parseDecimal(_ utf8: Substring.UTF8View) -> Int? {
        guard !utf8.isEmpty else { return nil }
        var value = 0
        for byte in utf8 {
            guard isDigit(byte) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(byte &- 0x30))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// Calls `body` with each element of a comma-separated list, trimmed of OWS (empty ones too).
    static func forEachListElement(_ value: String, _ body: (Substring) throws(HTTP1ParseError) -> Void)
        throws(HTTP1ParseError)
    {
        for element in value.split(separator: ",", omittingEmptySubsequences: false) {
            try body(trimmed(element))
        }
    }

    /// `text` without leading and trailing SP/HTAB.
    static func trimmed(_ text: Substring) -> Substring {
        var start = text.startIndex
        var end = text.endIndex
        while start < end, text[start] == " " || text[start] == "\t" { start = text.index(after: start) }
        while end > start {
            let before = text.index(before: end)
            guard text[before] == " " || text[before] == "\t" else { break }
            end = before
        }
        return text[start..<end]
    }

    /// Case-insensitive ASCII comparison against a lowercase literal.
    static func equalsIgnoringCase(_ text: Substring, _ lowercase: String) -> Bool {
        text.utf8.count == lowercase.utf8.count
            && zip(text.utf8, lowercase.utf8).allSatisfy { lhs, rhs in
                (lhs >= 0x41 && lhs <= 0x5A ? lhs | 0x20 : lhs) == rhs
            }
    }

    /// A `String` from `range` of `bytes` (UTF-8; invalid sequences become U+FFFD).
    @inline(__always)
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}
