// APNs Sandbox — the event hub's capacity and pacing, without sockets.
import Events
import Foundation
import Glibc
import Sandbox
import Support
import Testing

@testable import HTTP
@testable import Server

/// An empty event log.
private struct EmptyLog: EventLogRepository {
    func appendEvents(_ drafts: [EventDraft], completion: @escaping @Sendable (Result<[SandboxEvent], any Error>) -> Void) {
        completion(.success([]))
    }
    func events(after id: Int64, matching filter: EventFilter, limit: Int) throws -> [SandboxEvent] { [] }
    func latestEventID() throws -> Int64 { 0 }
    func oldestEventID() throws -> Int64? { nil }
    func pruneEvents(maxEvents: Int, olderThan cutoff: Int64) throws -> Int { 0 }
}

@Suite struct HostileEventStreamCapacityTests {
    private func makeHub(maxStreams: Int, perClient: Int) -> EventStreamHub {
        EventStreamHub(
            log: EmptyLog(), heartbeatSeconds: 3600,
            capacity: .init(maxStreams: maxStreams, maxStreamsPerClient: perClient), logger: Logger(label: "test"))
    }

    /// A client gets `maxStreamsPerClient` slots, the server `maxStreams` over all clients; released
    /// slots (or dropped ones) are available again.
    @Test func slotsAreCappedPerClientAndOverall() throws {
        let hub = makeHub(maxStreams: 3, perClient: 2)
        defer { hub.close() }
        let a1 = try hub.reserve(client: "192.0.2.1")
        var a2: EventStreamHub.Slot? = try hub.reserve(client: "192.0.2.1")
        #expect(throws: EventStreamHub.Refusal.clientFull(2)) { _ = try hub.reserve(client: "192.0.2.1") }
        let b1 = try hub.reserve(client: "192.0.2.2")
        #expect(throws: EventStreamHub.Refusal.serverFull(3)) { _ = try hub.reserve(client: "192.0.2.2") }
        #expect(hub.openStreams == 3)
        a1.release()
        a1.release()  // once only
        #expect(hub.openStreams == 2)
        a2 = nil  // a slot whose stream never started is given back when dropped
        _ = a2
        #expect(hub.openStreams == 1)
        let again = try hub.reserve(client: "192.0.2.1")
        #expect(hub.openStreams == 2)
        _ = (b1, again)
    }

    /// Catching up writes in pieces that never overflow the stream's buffer (which would end it), at the
    /// pace of its reader.
    @Test func catchUpIsPacedWithinTheBuffer() async throws {
        let writer = HTTPBodyWriter(maxBufferedBytes: 64 << 10)
        let frames = (0..<400).map { Array(repeating: UInt8(ascii: "x"), count: 1000 + $0) }
        let expected = frames.reduce(0) { $0 + $1.count }
        let reader = Task.detached { () -> Int in
            var received = 0
            while received < expected {
                let (bytes, _) = writer.take()
                received += bytes.count
                usleep(1000)
            }
            return received
        }
        let written = EventStreamHub.writePaced(frames, to: writer)
        #expect(written, "the stream was not ended by an overflow")
        #expect(await reader.value == expected)
        #expect(!writer.isClosed)
    }
}
