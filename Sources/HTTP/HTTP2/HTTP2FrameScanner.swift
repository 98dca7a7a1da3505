// APNs Sandbox — follows the frame boundaries of the bytes an HTTP/2 client sends.

/// Walks the frame headers of a client's HTTP/2 byte stream (after the 24-byte preface) and reports
/// every DATA, HEADERS and CONTINUATION frame's type, stream and length, without looking at payloads.
///
/// Why: nghttp2 silently drops DATA for streams it has closed (a stream reset after an early 413, a
/// refused stream) and gives the connection window straight back, so a peer can keep uploading into
/// them forever without any callback; and it decodes HEADERS for closed streams without a callback too (it
/// must, for HPACK's dynamic table). The handler counts those bytes from here.
///
/// A value type with no thread affinity; confine each instance to its connection.
struct HTTP2FrameScanner: Sendable {
    private static let frameHeaderLength = 9
    static let dataType: UInt8 = 0x0
    private static let headersType: UInt8 = 0x1
    private static let continuationType: UInt8 = 0x9

    private var prefaceLeft = 24
    /// Payload bytes of the current frame still to skip.
    private var payloadLeft = 0
    /// A frame header split across reads.
    private var partialHeader: [UInt8] = []

    init() {}

    /// Scans `bytes` (the next bytes of the stream) and calls `onFrame(type, streamID, payloadLength)` for each
    /// DATA, HEADERS or CONTINUATION frame whose header is in them.
    mutating func scan(_ bytes: UnsafeRawBufferPointer, onFrame onData: (UInt8, Int32, Int) -> Void) {
        var index = 0
        let count = bytes.count
        if prefaceLeft > 0 {
            let skipped = min(prefaceLeft, count)
            prefaceLeft -= skipped
            index += skipped
        }
        while index < count {
            if payloadLeft > 0 {
                let skipped = min(payloadLeft, count - index)
                payloadLeft -= skipped
                index += skipped
                continue
            }
            if partialHeader.isEmpty && count - index >= Self.frameHeaderLength {
                readHeader(
                    length: Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2]),
                    type: bytes[index + 3],
                    streamID: Self.streamID(bytes[index + 5], bytes[index + 6], bytes[index + 7], bytes[index + 8]),
                    onData: onData)
                index += Self.frameHeaderLength
                continue
            }
            let taken = min(Self.frameHeaderLength - partialHeader.count, count - index)
            partialHeader.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + taken)]))
            index += taken
            guard partialHeader.count == Self.frameHeaderLength else { break }
            let h = partialHeader
            partialHeader.removeAll(keepingCapacity: true)
            readHeader(
                length: Int(h[0]) << 16 | Int(h[1]) << 8 | Int(h[2]), type: h[3],
                streamID: Self.streamID(h[5], h[6], h[7], h[8]), onData: onData)
        }
    }

    private mutating func readHeader(length: Int, type: UInt8, streamID: Int32, onData: (UInt8, Int32, Int) -> Void) {
        payloadLeft = length
        if type == Self.dataType || type == Self.headersType || type == Self.continuationType { onData(type, streamID, length) }
    }

    private static func streamID(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int32 {
        Int32(bitPattern: (UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)) & 0x7FFF_FFFF)
    }
}
