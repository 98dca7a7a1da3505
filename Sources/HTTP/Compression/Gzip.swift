// APNs Sandbox — one-shot gzip (RFC 1952) through zlib, and Accept-Encoding negotiation.

import CLibShims
import CZlib

/// Why gzip compression or decompression failed.
public struct CompressionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: Sendable, Equatable {
        /// zlib could not set up a stream (bad level, out of memory).
        case initializationFailed
        /// The input is not valid gzip data.
        case corruptInput
        /// The input ends before the gzip stream does.
        case truncatedInput
        /// Decompressing would produce more than the allowed number of bytes.
        case outputLimitExceeded
        /// The input is too large for zlib's 32-bit counters.
        case inputTooLarge
    }

    public var kind: Kind
    /// The zlib return code (`Z_DATA_ERROR`, …), 0 when not from zlib.
    public var zlibCode: Int32
    /// zlib's message, when it gave one.
    public var detail: String

    public var description: String {
        let suffix = detail.isEmpty ? "" : ": \(detail)"
        return "gzip \(kind) (zlib \(zlibCode))\(suffix)"
    }

    static func make(_ kind: Kind, code: Int32 = 0, stream: UnsafeMutablePointer<z_stream>? = nil) -> Self {
        let detail = stream.flatMap { $0.pointee.msg }.map { String(cString: $0) } ?? ""
        return Self(kind: kind, zlibCode: code, detail: detail)
    }
}

/// One-shot gzip compression and decompression of in-memory buffers.
///
/// Each call owns a heap-allocated `z_stream` (zlib keeps its address) and ends it before
/// returning, so the functions are thread-safe.
public enum Gzip {
    /// zlib's `windowBits` for a 32 KiB window with a gzip header and trailer.
    private static let gzipWindowBits: Int32 = 15 + 16
    /// Output grows in steps of at least this many bytes.
    private static let minimumChunk = 4096

    /// Compresses `bytes` into one gzip member.
    /// - Parameters:
    ///   - bytes: The data to compress.
    ///   - level: zlib level, 0 (store) … 9 (best), or -1 for zlib's default.
    /// - Returns: The gzip-framed data.
    /// - Throws: `CompressionError` for an invalid level or a zlib failure.
    public static func compress(_ bytes: [UInt8], level: Int32 = 6) throws(CompressionError) -> [UInt8] {
        guard bytes.count <= Int(UInt32.max) else { throw .make(.inputTooLarge) }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        let initCode = CLibShims_deflateInit2(stream, level, Z_DEFLATED, gzipWindowBits, 8, Z_DEFAULT_STRATEGY)
        guard initCode == Z_OK else { throw .make(.initializationFailed, code: initCode, stream: stream) }
        defer { deflateEnd(stream) }

        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(bytes.count))))
        var produced = 0
        try bytes.withUnsafeBufferPointer { (input) throws(CompressionError) in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            while true {
                if produced == output.count {
                    output.append(contentsOf: repeatElement(0, count: max(minimumChunk, output.count / 2)))
                }
                let code = output.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress.map { $0 + produced }
                    stream.pointee.avail_out = uInt(clamping: out.count - produced)
                    let before = stream.pointee.avail_out
                    let code = deflate(stream, Z_FINISH)
                    produced += Int(before - stream.pointee.avail_out)
                    return code
                }
                if code == Z_STREAM_END { break }
                // Z_OK / Z_BUF_ERROR: out of output space; grow and go on.
                guard code == Z_OK || code == Z_BUF_ERROR else {
                    throw .make(.corruptInput, code: code, stream: stream)
                }
            }
        }
        output.removeLast(output.count - produced)
        return output
    }

    /// Decompresses gzip data (one member or several concatenated), refusing to inflate past `maxOutput`.
    /// - Parameters:
    ///   - bytes: gzip-framed data.
    ///   - maxOutput: The most decompressed bytes accepted (a bound against decompression bombs).
    /// - Returns: The decompressed data.
    /// - Throws: `CompressionError` of kind `.corruptInput`, `.truncatedInput` or `.outputLimitExceeded`.
    public static func decompress(_ bytes: [UInt8], maxOutput: Int = 16 << 20) throws(CompressionError) -> [UInt8] {
        guard bytes.count <= Int(UInt32.max) else { throw .make(.inputTooLarge) }
        guard !bytes.isEmpty else { throw .make(.truncatedInput) }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        let initCode = CLibShims_inflateInit2(stream, gzipWindowBits)
        guard initCode == Z_OK else { throw .make(.initializationFailed, code: initCode, stream: stream) }
        defer { inflateEnd(stream) }

        // One byte past the limit tells "exactly maxOutput" apart from "more".
        let ceiling = max(maxOutput, 0) &+ 1
        var output = [UInt8](repeating: 0, count: min(ceiling, max(minimumChunk, bytes.count * 4)))
        var produced = 0
        try bytes.withUnsafeBufferPointer { (input) throws(CompressionError) in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            while true {
                if produced == output.count {
                    guard output.count < ceiling else { throw .make(.outputLimitExceeded) }
                    let grown = min(ceiling, output.count * 2)
                    output.append(contentsOf: repeatElement(0, count: grown - output.count))
                }
                let code = output.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress.map { $0 + produced }
                    stream.pointee.avail_out = uInt(clamping: out.count - produced)
                    let before = stream.pointee.avail_out
                    let code = inflate(stream, Z_NO_FLUSH)
                    produced += Int(before - stream.pointee.avail_out)
                    return code
                }
                if produced > maxOutput { throw .make(.outputLimitExceeded) }
                switch code {
                case Z_STREAM_END:
                    guard stream.pointee.avail_in > 0 else { return }
                    // Another gzip member follows (RFC 1952 §2.2); garbage fails as Z_DATA_ERROR.
                    let resetCode = inflateReset(stream)
                    guard resetCode == Z_OK else { throw .make(.corruptInput, code: resetCode, stream: stream) }
                case Z_OK:
                    continue
                case Z_BUF_ERROR:
                    // No progress possible: either output is full (grow) or the input ran out.
                    guard stream.pointee.avail_in == 0 else { continue }
                    throw .make(.truncatedInput, code: code)
                default:
                    throw .make(.corruptInput, code: code, stream: stream)
                }
            }
        }
        output.removeLast(output.count - produced)
        return output
    }

    /// Whether an `Accept-Encoding` value allows a gzip response.
    ///
    /// `gzip` (or `x-gzip`) with a non-zero q-value allows it; otherwise `*` with a non-zero q-value
    /// does. A missing or empty header means identity only here (we never compress unasked).
    /// Malformed q-values count as `q=0`.
    public static func acceptsGzip(_ acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        var gzipAccepted: Bool?
        var wildcardAccepted: Bool?
        for element in acceptEncoding.split(separator: ",") {
            var parts = element.split(separator: ";").makeIterator()
            guard let coding = parts.next().map(HTTP1Syntax.trimmed), !coding.isEmpty else { continue }
            var accepted = true
            while let parameter = parts.next().map(HTTP1Syntax.trimmed) {
                guard let equals = parameter.firstIndex(of: "="),
                    HTTP1Syntax.equalsIgnoringCase(HTTP1Syntax.trimmed(parameter[..<equals]), "q")
                else { continue }
                accepted = isNonZeroQValue(HTTP1Syntax.trimmed(parameter[parameter.index(after: equals)...]))
            }
            if HTTP1Syntax.equalsIgnoringCase(coding, "gzip") || HTTP1Syntax.equalsIgnoringCase(coding, "x-gzip") {
                gzipAccepted = (gzipAccepted ?? false) || accepted
            } else if coding == "*" {
                wildcardAccepted = (wildcardAccepted ?? false) || accepted
            }
        }
        return gzipAccepted ?? wildcardAccepted ?? false
    }

    /// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )` (RFC 9110 §12.4.2), greater than 0.
    private static func isNonZeroQValue(_ text: Substring) -> Bool {
        let utf8 = Array(text.utf8)
        guard let first = utf8.first, first == 0x30 || first == 0x31 else { return false }
        if utf8.count == 1 { return first == 0x31 }
        guard utf8[1] == 0x2E, utf8.count <= 5 else { return false }
        let decimals = utf8[2...]
        guard decimals.allSatisfy(HTTP1Syntax.isDigit) else { return false }
        if first == 0x31 { return decimals.allSatisfy { $0 == 0x30 } }
        return decimals.contains { $0 != 0x30 }
    }
}
