// APNs Sandbox — HPACK bombs: header blocks whose dynamic-table references decode to megabytes (issue #32, item 4).
import Dispatch
import Foundation
import Glibc
import TestProcessSupport
import Testing

/// One 4 KB entry goes into HPACK's dynamic table; each later block references it thousands of times, one byte
/// per reference, so a 16 KB block decodes to ~64 MB. nghttp2 must decode every block it gets (HPACK state is
/// shared by the connection): before, each cost ~7 ms of CPU and the connection was never closed (2,000 blocks:
/// 13.6 s of CPU). Now a block decoding past four times the header-list limit (64 KiB here) ends the connection
/// with GOAWAY ENHANCE_YOUR_CALM `{"reason":"HeaderBlockTooLarge"}`, and blocks nghttp2 decodes for closed streams
/// (no callback can stop those) are counted and end it past a 256 KiB burst.
@Suite(.scaledTimeLimit(minutes: 2))
struct HostileHPACKBombTests {
    private final class BlockCount: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }

    private static func literal(_ text: String) -> [UInt8] { HTTP2Frame.hpackLiteral(text) }

    /// `GET /healthz` on stream 1 that adds `x-bomb: <4,000 bytes>` to the dynamic table (literal with incremental
    /// indexing, RFC 7541 §6.2.1): entry size 4,038 of the default 4,096.
    private static let seed: [UInt8] = {
        let block = [0x82, 0x86] + [0x04] + literal("/healthz") + [0x01] + literal("bomb")
            + [0x40] + literal("x-bomb") + literal(String(repeating: "a", count: 4000))
        return HTTP2Frame.encode(
            type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders | HTTP2Frame.flagEndStream, streamID: 1, payload: block)
    }()

    /// `GET /healthz` on stream 3 that adds `connection: close` to the dynamic table (index 62 from then on, the
    /// 4 KB entry 63): a connection-specific field, invalid in HTTP/2, so nghttp2 resets the stream of any block
    /// that references it and decodes the rest of that block without callbacks.
    private static let invalidSeed: [UInt8] = {
        let block = [0x82, 0x86] + [0x04] + literal("/healthz") + [0x01] + literal("bomb")
            + [0x40] + literal("connection") + literal("close")
        return HTTP2Frame.encode(
            type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders | HTTP2Frame.flagEndStream, streamID: 3, payload: block)
    }()

    /// A HEADERS frame on `stream` of 16,000 references to the 4 KB entry (`reference`: index 62, 0xBE, or 63,
    /// 0xBF), after the pseudo-headers and `prefix`.
    private static func bomb(_ stream: UInt32, prefix: [UInt8] = [], reference: UInt8 = 0xBE) -> [UInt8] {
        let block = [0x82, 0x86, 0x84] + [0x01] + literal("bomb") + prefix + [UInt8](repeating: reference, count: 16_000)
        return HTTP2Frame.encode(
            type: HTTP2Frame.headers, flags: HTTP2Frame.flagEndHeaders | HTTP2Frame.flagEndStream, streamID: stream, payload: block)
    }

    /// Sends the seed (and `extraSeed`, answered on stream 3), then up to 2,000 blocks `bomb(i)` until the server
    /// closes; what the server sent, how many blocks went out, and the server's CPU seconds meanwhile.
    private static func attack(
        _ server: HostileServer, extraSeed: [UInt8] = [], bomb: @escaping @Sendable (Int) -> [UInt8]
    ) async throws -> (frames: [HTTP2Frame], closed: Bool, blocksSent: Int, cpu: Double) {
        let cpuBefore = server.cpuSeconds
        let (result, sent) = try await offload {
            let socket = try RawSocket(port: server.port)
            try socket.send(HTTP2Frame.clientPreface + seed + extraSeed)
            let seeded = socket.read(timeout: TestTime.seconds(15)) { bytes in
                let frames = HTTP2Frame.parseAll(bytes)
                return frames.contains { $0.streamID == 1 && $0.type == HTTP2Frame.headers }
                    && (extraSeed.isEmpty || frames.contains { $0.streamID == 3 })
            }
            // The seed must be answered first: a bomb on stream 1 still open would be a different case.
            guard HTTP2Frame.parseAll(seeded.bytes).contains(where: { $0.streamID == 1 && $0.type == HTTP2Frame.headers }) else {
                throw ProcessError("the seed request was not answered: \(seeded)")
            }
            let blocks = BlockCount()
            let written = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                for i in 0..<2000 {
                    guard (try? socket.send(bomb(i))) != nil else { break }
                    blocks.add()
                }
                written.signal()
            }
            let result = socket.read(timeout: 20 * TestTime.scale)
            shutdown(socket.fd, Int32(SHUT_RDWR))
            written.wait()
            return (ReadResult(bytes: seeded.bytes + result.bytes, closed: result.closed, reset: result.reset, elapsed: result.elapsed),
                    blocks.value)
        }
        return (HTTP2Frame.parseAll(result.bytes), result.closed, sent, server.cpuSeconds - cpuBefore)
    }

    /// Bombs on new streams: the first one ends the connection; the server's CPU stays far below one block's worth
    /// per block sent, and it keeps serving.
    @Test func bombOnNewStreamsEndsTheConnection() async throws {
        let server = try await HostileServer.start()
        defer { server.stop() }
        let (frames, closed, sent, cpu) = try await Self.attack(server) { Self.bomb(UInt32(3 + 2 * $0)) }
        let goAway = try #require(frames.first { $0.type == HTTP2Frame.goaway }, "no GOAWAY: \(frames.map(\.type))")
        #expect(goAway.goawayErrorCode == 0xb, "ENHANCE_YOUR_CALM")
        #expect(String(decoding: goAway.payload.dropFirst(8), as: UTF8.self) == #"{"reason":"HeaderBlockTooLarge"}"#)
        #expect(closed, "the server closed the connection")
        #expect(cpu < 1, "CPU for \(sent) bomb blocks sent: \(cpu) s (before: ~7 ms a block)")
        print("HPACK bomb on new streams: \(sent) blocks sent before the close, server CPU \(cpu) s")
        #expect(server.isRunning)
        let health = try await run("curl", args: ["-sf", "http://127.0.0.1:\(server.port)/healthz"], timeout: 10)
        #expect(health.status == 0, "\(health)")
    }

    /// Bombs as HEADERS on stream 1 after it closed: nghttp2 decodes them (HPACK state) without any callback; they
    /// are counted from the frame headers, and past the burst (256 KiB: 16 blocks) the connection ends.
    @Test func bombOnAClosedStreamEndsTheConnection() async throws {
        let server = try await HostileServer.start()
        defer { server.stop() }
        let (frames, closed, sent, cpu) = try await Self.attack(server) { _ in Self.bomb(1) }
        let goAway = try #require(frames.first { $0.type == HTTP2Frame.goaway }, "no GOAWAY: \(frames.map(\.type))")
        // (nghttp2 keeps no closed stream, `nghttp2_option_set_no_closed_streams`: else it would call HEADERS on a
        // stream it still knew a connection error, STREAM_CLOSED, and ignore them only on one it had forgotten.)
        let reason = String(decoding: goAway.payload.dropFirst(8), as: UTF8.self)
        #expect(goAway.goawayErrorCode == 0xb, "ENHANCE_YOUR_CALM")
        #expect(reason == #"{"reason":"TooManyHeadersOnClosedStreams"}"#)
        #expect(closed, "the server closed the connection")
        #expect(cpu < 1, "CPU for \(sent) bomb blocks sent: \(cpu) s")
        print("HPACK bomb on a closed stream: GOAWAY \(goAway.goawayErrorCode ?? 0) \(reason), \(sent) blocks sent, server CPU \(cpu) s")
        #expect(server.isRunning)
    }

    /// Bombs that start with an invalid field (a `connection` header from the dynamic table): nghttp2 resets each
    /// stream and decodes the rest of its block with no callback, so the per-block bound never sees it; the
    /// blocks are counted from the frame headers like blocks for closed streams, and the connection ends.
    @Test func bombAfterAnInvalidFieldEndsTheConnection() async throws {
        let server = try await HostileServer.start()
        defer { server.stop() }
        let (frames, closed, sent, cpu) = try await Self.attack(server, extraSeed: Self.invalidSeed) {
            Self.bomb(UInt32(5 + 2 * $0), prefix: [0xBE], reference: 0xBF)
        }
        #expect(frames.contains { $0.streamID == 3 && $0.type == HTTP2Frame.rstStream && $0.rstErrorCode == 0x1 },
                "the invalid seed's stream is reset with PROTOCOL_ERROR, as nghttp2 does")
        let goAway = try #require(frames.first { $0.type == HTTP2Frame.goaway }, "no GOAWAY: \(frames.map(\.type))")
        let reason = String(decoding: goAway.payload.dropFirst(8), as: UTF8.self)
        #expect(goAway.goawayErrorCode == 0xb, "ENHANCE_YOUR_CALM")
        #expect(reason == #"{"reason":"TooManyHeadersOnClosedStreams"}"#)
        #expect(closed, "the server closed the connection")
        #expect(cpu < 1, "CPU for \(sent) bomb blocks sent: \(cpu) s")
        print("HPACK bomb after an invalid field: GOAWAY \(goAway.goawayErrorCode ?? 0) \(reason), \(sent) blocks sent, server CPU \(cpu) s")
        #expect(server.isRunning)
    }
}
