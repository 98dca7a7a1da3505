// APNs Sandbox — GOAWAY debug data and the GOAWAY frame as pure values: no sockets.
import Testing

@testable import HTTP

@Suite struct GoAwayDebugDataTests {
    /// The debug data is Apple's JSON shape, without spaces.
    @Test func debugDataIsApplesShape() {
        #expect(String(decoding: GoAwayReason.idleTimeout.debugData, as: UTF8.self) == #"{"reason":"IdleTimeout"}"#)
        #expect(String(decoding: GoAwayReason.shutdown.debugData, as: UTF8.self) == #"{"reason":"Shutdown"}"#)
        #expect(GoAwayReason(.rapidReset) == .tooManyStreamResets)
        #expect(GoAwayReason(.discardedData) == .tooMuchDataOnClosedStreams)
    }

    /// A GOAWAY frame: length, type 7, stream 0, last-stream-id (high bit clear), error code, debug data.
    @Test func frameLayout() {
        let frame = HTTP2GoAwayFrame.encode(lastStreamID: Int32.max, errorCode: 0xB, debugData: Array("ab".utf8))
        #expect(frame == [0, 0, 10, 7, 0, 0, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0xB, 0x61, 0x62])
    }
}
