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

    /// Removing records keeps the others in order, newest first, wherever the ring had wrapped; new records
    /// go on after them; only a reset of the whole log zeroes the counts.
    @Test func removesRecordsAndKeepsTheRestInOrder() {
        let log = RecentPushes(capacity: 4)
        for i in 0..<6 { log.record(record("id\(i)")) }
        log.removeAll { $0.apnsID == "id3" }
        #expect(log.newest(10).map(\.apnsID) == ["id5", "id4", "id2"])
        #expect(log.counts.accepted == 6)
        log.record(record("id6"))
        log.record(record("id7"))
        #expect(log.newest(10).map(\.apnsID) == ["id7", "id6", "id5", "id4"])
        log.removeAll(where: { _ in true }, resettingCounts: true)
        #expect(log.newest(10).isEmpty)
        #expect(log.counts.accepted == 0 && log.counts.rejected == 0)
        log.record(record("id8"))
        #expect(log.newest(10).map(\.apnsID) == ["id8"])
    }

    /// The log keeps what it lists of a push, not its headers (the provider token) or its body: the body's size,
    /// the authentication, the rejection and whether it was accepted.
    @Test func keepsWhatItListsOfAPush() throws {
        let log = RecentPushes(capacity: 2)
        log.record(PushRecord(
            apnsID: "a", uniqueID: "u", deviceToken: "ab", topic: "com.example.app", bundleID: "com.example.app",
            pushType: .alert, priority: 5, environment: .production,
            headers: [("authorization", "bearer eyJ.secret.sig"), ("apns-topic", "com.example.app")],
            payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), authentication: .token(keyID: "K", teamID: "T", issuedAt: 1),
            connectionID: 7, receivedAt: 42))
        log.record(record("b", rejected: true))
        let newest = log.newest(2)
        let entry = try #require(newest.last)
        #expect(entry.apnsID == "a" && entry.uniqueID == "u" && entry.deviceToken == "ab")
        #expect(entry.topic == "com.example.app" && entry.bundleID == "com.example.app" && entry.pushType == .alert)
        #expect(entry.priority == 5 && entry.environment == .production && entry.connectionID == 7 && entry.receivedAt == 42)
        #expect(entry.payloadBytes == 22)
        #expect(entry.isAccepted && entry.rejection == nil)
        guard case .token(let keyID, let teamID, _) = entry.authentication else { throw PushLogTestError.notToken }
        #expect(keyID == "K" && teamID == "T")
        #expect(newest.first?.isAccepted == false && newest.first?.rejection?.reason == .badTopic)
        let text = String(describing: newest)
        #expect(!text.contains("secret"), "no header of the push is kept: \(text)")
        // A push a fault rule dropped (no rejection) is not accepted either.
        var dropped = record("c")
        dropped.fault = AppliedFault(ruleID: "r1", name: nil, action: "closeConnection", detail: "", dropsPush: true)
        log.record(dropped)
        let entry3 = try #require(log.find(apnsID: "c"))
        #expect(!entry3.isAccepted && entry3.rejection == nil && entry3.fault?.ruleID == "r1")
        #expect(log.counts.accepted == 1 && log.counts.rejected == 2)
    }

    private enum PushLogTestError: Error { case notToken }
}
