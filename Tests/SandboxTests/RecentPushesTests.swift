// APNs Sandbox — the bounded in-memory push log.
import APNsProtocol
import Sandbox
import Testing

@Suite struct RecentPushesTests {
    private func record(_ id: String, rejected: Bool = false) -> PushRecord {
        PushRecord(
            apnsID: id, deviceToken: "ab", environment: .development, headers: [], payload: [],
            authentication: .none, connectionID: 1, receivedAt: 0, rejection: rejected ? APNsError(.badTopic) : nil)
    }

    /// The log keeps the newest records, newest first, and counts everything.
    @Test func keepsNewestAndCountsAll() {
        let log = RecentPushes(capacity: 3)
        for i in 0..<5 { log.record(record("id\(i)", rejected: i == 4)) }
        #expect(log.newest(10).map(\.apnsID) == ["id4", "id3", "id2"])
        #expect(log.counts.accepted == 4)
        #expect(log.counts.rejected == 1)
        #expect(log.find(apnsID: "id3") != nil)
        #expect(log.find(apnsID: "id0") == nil)
    }
}
