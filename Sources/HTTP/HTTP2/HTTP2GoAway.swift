// APNs Sandbox — why the server sends GOAWAY, as Apple words it, and the frame nghttp2 cannot send with it.

/// Why this server sends a GOAWAY: the reason goes out as the frame's debug data in Apple's shape,
/// `{"reason":"IdleTimeout"}` (APNs sends the same JSON object it uses for request errors, e.g.
/// `{"reason":"BadCertificateEnvironment"}`). Clients log it: Pushy prints
/// `Received GOAWAY from APNs server: {"reason":"Shutdown"}`, Python `h2` hands it over as
/// `ConnectionTerminated.additional_data`, Go's HTTP/2 transport as `GoAwayError.DebugData`.
///
/// `idleTimeout` and `shutdown` are Apple's reasons; the ENHANCE_YOUR_CALM reasons are the
/// sandbox's own (Apple documents none for them). GOAWAYs that nghttp2 raises itself for protocol
/// errors keep nghttp2's plain-text debug data (e.g. `request HEADERS: max concurrent streams exceeded`).
enum GoAwayReason: String, Sendable, CaseIterable {
    /// No request activity for `idleTimeout` (NO_ERROR).
    case idleTimeout = "IdleTimeout"
    /// Graceful shutdown: both the shutdown notice and the final GOAWAY (NO_ERROR).
    case shutdown = "Shutdown"
    /// Rapid reset: more RST_STREAM than `streamResetBurst` / `streamResetsPerSecond` (ENHANCE_YOUR_CALM).
    case tooManyStreamResets = "TooManyStreamResets"
    /// DATA on closed streams beyond `discardedDataBurstBytes` / `discardedDataBytesPerSecond` (ENHANCE_YOUR_CALM).
    case tooMuchDataOnClosedStreams = "TooMuchDataOnClosedStreams"
    /// A header block decoding past four times SETTINGS_MAX_HEADER_LIST_SIZE (at least 64 KiB): an HPACK bomb
    /// (ENHANCE_YOUR_CALM).
    case headerBlockTooLarge = "HeaderBlockTooLarge"
    /// HEADERS on closed streams beyond `ignoredHeaderBurstBytes` / `ignoredHeaderBytesPerSecond` (ENHANCE_YOUR_CALM).
    case tooManyHeadersOnClosedStreams = "TooManyHeadersOnClosedStreams"

    /// The GOAWAY's error code: NO_ERROR (0) for Apple's reasons, ENHANCE_YOUR_CALM (0xb) for the sandbox's.
    var errorCode: UInt32 {
        switch self {
        case .idleTimeout, .shutdown: 0x0
        case .tooManyStreamResets, .tooMuchDataOnClosedStreams, .headerBlockTooLarge, .tooManyHeadersOnClosedStreams: 0xb
        }
    }

    /// The GOAWAY debug data: `{"reason":"<rawValue>"}` (no spaces, as APNs writes it).
    var debugData: [UInt8] { Array(#"{"reason":""#.utf8) + Array(rawValue.utf8) + Array(#""}"#.utf8) }

    /// The reason for a peer sent away by the ``ConnectionGuard``.
    init(_ violation: ConnectionGuard.Violation) {
        switch violation {
        case .rapidReset: self = .tooManyStreamResets
        case .discardedData: self = .tooMuchDataOnClosedStreams
        case .headerBlockTooLarge: self = .headerBlockTooLarge
        case .ignoredHeaderBlocks: self = .tooManyHeadersOnClosedStreams
        }
    }
}

/// A GOAWAY frame (RFC 9113 §6.8) built here rather than by nghttp2, for the two GOAWAYs whose nghttp2 1.52
/// calls take no debug data: `nghttp2_submit_shutdown_notice` and `nghttp2_session_terminate_session`.
///
/// Why not `nghttp2_submit_goaway` (which takes debug data) for them: nghttp2 treats every GOAWAY it sends that
/// way as final. With the notice's last-stream-id 2^31-1 it would then ignore the streams a client opens
/// before it has seen the notice, which is what the two-step shutdown exists to accept; and in place of
/// `terminate_session` it would keep reading and writing the streams up to the last-stream-id. The notice
/// changes no nghttp2 state anyway (nghttp2 sends it and "does nothing more"), and a terminated connection
/// writes nothing after its GOAWAY, so a frame written between two frames of nghttp2's output is exact.
enum HTTP2GoAwayFrame {
    static let type: UInt8 = 0x7

    /// The frame's bytes: 9-byte header (stream 0, no flags), last-stream-id, error code, debug data.
    static func encode(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) -> [UInt8] {
        let length = 8 + debugData.count
        let last = UInt32(bitPattern: lastStreamID) & 0x7FFF_FFFF
        var frame: [UInt8] = [
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
            type, 0, 0, 0, 0, 0,
        ]
        frame.reserveCapacity(9 + length)
        for shift in stride(from: 24, through: 0, by: -8) { frame.append(UInt8(truncatingIfNeeded: last >> UInt32(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { frame.append(UInt8(truncatingIfNeeded: errorCode >> UInt32(shift))) }
        frame.append(contentsOf: debugData)
        return frame
    }
}
