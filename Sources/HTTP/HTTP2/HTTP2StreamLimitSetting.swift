// APNs Sandbox — SETTINGS_MAX_CONCURRENT_STREAMS advertised to the peer without nghttp2 enforcing it.

/// How the server's SETTINGS_MAX_CONCURRENT_STREAMS reaches the peer while nghttp2 never takes it as its own limit.
///
/// Why: nghttp2 1.52 answers a stream over an *acknowledged* SETTINGS_MAX_CONCURRENT_STREAMS with a connection
/// error, `GOAWAY PROTOCOL_ERROR` ("request HEADERS: max concurrent streams exceeded",
/// `nghttp2_session_on_request_headers_received`), and only a stream over a not-yet-acknowledged one with
/// `RST_STREAM REFUSED_STREAM`. RFC 9113 §5.1.2 makes the excess a stream error, APNs refuses such streams one by
/// one with RST_STREAM (Pushy retries them, its issue #476), and a connection error costs a client every push in
/// flight: Go's `x/net/http2` opens streams within the new limit before its ACK of a raise reaches the server.
/// So the handler submits the entry under ``placeholderID`` — a SETTINGS id nghttp2 accepts, sends and, on the
/// ACK, ignores (RFC 9113 §6.5.2: unknown settings are ignored) — and ``HTTP2SettingsRewriter`` gives it the real
/// id in the bytes nghttp2 writes. nghttp2's own limit stays its default (unlimited); the handler refuses the
/// streams over the limit it advertised last, each with `RST_STREAM REFUSED_STREAM`
/// (`HTTP2ConnectionHandler.beginHeaders`).
enum HTTP2StreamLimitSetting {
    /// SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2).
    static let id: UInt16 = 0x3
    /// The id the entry carries between nghttp2 and the rewriter; never on the wire.
    static let placeholderID: UInt16 = 0xF3A7
}

/// Rewrites ``HTTP2StreamLimitSetting/placeholderID`` to SETTINGS_MAX_CONCURRENT_STREAMS in the server's
/// outgoing byte stream. It follows frame boundaries across the chunks `nghttp2_session_mem_send` returns and
/// looks inside SETTINGS frames only; a chunk without one is passed through untouched (no copy).
///
/// nghttp2 serializes each non-DATA frame into one buffer and returns it whole, so a SETTINGS entry is never
/// split across chunks; an id split anyway is left as it is (the peer ignores an unknown setting) and counted
/// in ``unpatched``.
///
/// A value type with no thread affinity; confine each instance to its connection.
struct HTTP2SettingsRewriter: Sendable {
    private static let frameHeaderLength = 9
    private static let settingsType: UInt8 = 0x4
    private static let entryLength = 6

    /// Payload bytes of the current frame still to come.
    private var payloadLeft = 0
    /// The current frame is a SETTINGS frame (its payload: 6-byte entries).
    private var inSettings = false
    /// Position within the current SETTINGS payload.
    private var settingsOffset = 0
    /// A frame header split across chunks.
    private var partialHeader: [UInt8] = []
    /// Placeholder ids that could not be rewritten (split across chunks); 0 with nghttp2 as it is.
    private(set) var unpatched = 0

    init() {}

    /// The chunk as it must go out: nil when it is unchanged, else a patched copy.
    mutating func rewrite(_ chunk: UnsafeRawBufferPointer) -> [UInt8]? {
        var patched: [UInt8]?
        var index = 0
        let count = chunk.count
        while index < count {
            if payloadLeft > 0 {
                let take = min(payloadLeft, count - index)
                if inSettings { patchEntries(chunk, from: index, count: take, into: &patched) }
                payloadLeft -= take
                index += take
                continue
            }
            if partialHeader.isEmpty && count - index >= Self.frameHeaderLength {
                startFrame(length: Self.length(chunk[index], chunk[index + 1], chunk[index + 2]), type: chunk[index + 3])
                index += Self.frameHeaderLength
                continue
            }
            let taken = min(Self.frameHeaderLength - partialHeader.count, count - index)
            partialHeader.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[index..<(index + taken)]))
            index += taken
            guard partialHeader.count == Self.frameHeaderLength else { break }
            let h = partialHeader
            partialHeader.removeAll(keepingCapacity: true)
            startFrame(length: Self.length(h[0], h[1], h[2]), type: h[3])
        }
        return patched
    }

    private mutating func startFrame(length: Int, type: UInt8) {
        payloadLeft = length
        inSettings = type == Self.settingsType
        settingsOffset = 0
    }

    /// Looks at the SETTINGS payload bytes `chunk[start..<start+count]` for entry ids that are the placeholder.
    private mutating func patchEntries(_ chunk: UnsafeRawBufferPointer, from start: Int, count: Int, into patched: inout [UInt8]?) {
        var position = start
        let end = start + count
        while position < end {
            let inEntry = settingsOffset % Self.entryLength
            if inEntry == 0 {
                if position + 1 < end {
                    let id = UInt16(chunk[position]) << 8 | UInt16(chunk[position + 1])
                    if id == HTTP2StreamLimitSetting.placeholderID {
                        if patched == nil { patched = Array(chunk) }
                        patched?[position] = UInt8(HTTP2StreamLimitSetting.id >> 8)
                        patched?[position + 1] = UInt8(HTTP2StreamLimitSetting.id & 0xFF)
                    }
                } else if chunk[position] == UInt8(HTTP2StreamLimitSetting.placeholderID >> 8) {
                    unpatched += 1
                }
            }
            let step = min(Self.entryLength - inEntry, end - position)
            settingsOffset += step
            position += step
        }
    }

    private static func length(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Int {
        Int(a) << 16 | Int(b) << 8 | Int(c)
    }
}
