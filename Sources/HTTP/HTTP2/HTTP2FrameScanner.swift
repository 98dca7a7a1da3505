// APNs Sandbox — follows the frame boundaries of the bytes an HTTP/2 client sends.

/// Walks the frame headers of a client's HTTP/2 byte stream (after the 24-byte preface) and reports
/// every DATA frame's stream and length, without looking at payloads.
///
/// Why: nghttp2 silently drops DATA for streams it has closed (a stream reset after an early 413, a
/// refused stream) and gives the connection window straight back, so a peer can keep uploading into
/// them forever without any callback. The handler counts those bytes from here.
///
/// A value type with no thread affinity; confine each instance to its connection.
struct HTTP2FrameScanner: Sendable {
    private static let frameHeaderLength = 9
    private static let dataFrameType: UInt8 = 0

    private var prefaceLeft = 24
    /// Payload bytes of the current frame still to skip.
    private var payloadLeft = 0
    /// A frame header split across reads.
    private var partialHeader: [UInt8] = []

    init() {}

    /// Scans `bytes` (the next bytes of the stream) and calls `onData(streamID, payloadLength)` for each
    /// DATA frame whose header is in them.
    mutating func scan(_ bytes: UnsafeRawBufferPointer, onData: (Int32, Int) -> Void) {
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

    private mutating func readHeader(length: Int, type: UInt8, streamID: Int32, onData: (Int32, Int) -> Void) {
        payloadLeft = length
        if type == Self.dataFrameType { onData(streamID, length) }
    }

    private static func streamID(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int32 {
        Int32(bitPattern: (UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)) & 0x7FFF_FFFF)
    }
}
