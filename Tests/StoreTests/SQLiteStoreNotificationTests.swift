// APNs Sandbox — notifications in the SQLite store: save, update, query, delete, prune.
import APNsProtocol
import Sandbox
@testable import Store
import Support
import Testing

@Suite struct SQLiteStoreNotificationTests {
    let directory: TemporaryDirectory
    let store: SQLiteStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.file("store.sqlite"))
    }

    /// The row's AUTOINCREMENT sequence number (not part of the public API).
    private func seq(of apnsID: String) throws -> Int? {
        try store.read { connection in
            try connection.withStatement("SELECT seq FROM notifications WHERE apns_id = ?") { statement in
                try statement.bind(apnsID, at: 1)
                return try statement.step() ? statement.int(at: 0) : nil
            }
        }
    }

    /// A saved record reads back equal, by apns-id and through queries.
    @Test func savesAndReadsBackExactly() async throws {
        var record = sampleRecord(status: .displayed)
        record.outcome = .processed
        record.displayed = DisplayedContent(title: "«Hi»", body: "\"quoted\"\n", badge: 3, relevanceScore: 0.5,
                                            userInfoJSON: #"{"a":[1,2]}"#)
        try await store.save([record])
        #expect(try store.notification(apnsID: record.apnsID) == record)
        #expect(try store.notification(apnsID: "missing") == nil)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 10, offset: 0) == [record])
        #expect(try store.count(matching: NotificationFilter()) == 1)
    }

    /// Saving an existing apns-id replaces the record in place: same seq, new status and content.
    @Test func updatesInPlace() async throws {
        let first = sampleRecord(apnsID: "first")
        let second = sampleRecord(apnsID: "second")
        try await store.save([first, second])
        let seqBefore = try seq(of: "first")
        var updated = first
        updated.status = .delivering
        updated.timeline.append(TimelineEntry(step: "delivering", at: first.receivedAt + 5, monotonic: 999))
        try await store.save([updated])
        #expect(try seq(of: "first") == seqBefore)
        #expect(try store.notification(apnsID: "first") == updated)
        #expect(try store.count(matching: NotificationFilter()) == 2)
        #expect(try store.count(matching: NotificationFilter(status: .delivering)) == 1)
        #expect(try store.count(matching: NotificationFilter(status: .accepted)) == 1)
        // Same received_at: insertion order decides, newest first, and the update kept "first" older.
        #expect(try store.notifications(matching: NotificationFilter(), limit: 10, offset: 0).map(\.apnsID)
            == ["second", "first"])
    }

    /// One save with several states of one push writes its last state at the place of its first, and
    /// a state change leaves the row's indexed identity (device, topic, receipt time) as it was.
    @Test func savesTheLastStateOfEachPush() async throws {
        let accepted = sampleRecord(apnsID: "a")
        var delivering = accepted
        delivering.status = .delivering
        var displayed = delivering
        displayed.status = .displayed
        let other = sampleRecord(apnsID: "b")
        #expect(SQLiteStore.lastStates(of: [accepted, other, delivering, displayed]).map(\.status)
            == [.displayed, .accepted])
        try await store.save([accepted, other, delivering, displayed])
        #expect(try store.notification(apnsID: "a") == displayed)
        #expect(try store.count(matching: NotificationFilter(status: .displayed)) == 1)
        #expect(try store.count(matching: NotificationFilter(deviceToken: accepted.deviceToken, status: .displayed)) == 1)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 10, offset: 0).map(\.apnsID) == ["b", "a"])
    }

    /// A notification is an apns-id on a device: the same apns-id on another device is another row; a
    /// new push reusing it on the same device (another topic and time) replaces that row entirely.
    @Test func apnsIDIsUniquePerDevice() async throws {
        let first = sampleRecord(apnsID: "same")
        try await store.save([first])
        var elsewhere = sampleRecord(apnsID: "same", token: String(repeating: "cd", count: 32))
        elsewhere.receivedAt = first.receivedAt + 500
        try await store.save([elsewhere])
        #expect(try store.count(matching: NotificationFilter()) == 2)
        #expect(try store.notification(apnsID: "same", deviceToken: first.deviceToken) == first)
        #expect(try store.notification(apnsID: "same", deviceToken: elsewhere.deviceToken) == elsewhere)
        #expect(try store.notification(apnsID: "same") == elsewhere, "the newest without a device")
        #expect(try store.notification(apnsID: "same", deviceToken: String(repeating: "ef", count: 32)) == nil)
        #expect(try store.containsNotification(apnsID: "same", deviceToken: elsewhere.deviceToken))
        #expect(try store.containsNotification(apnsID: "same", deviceToken: nil))
        #expect(try !store.containsNotification(apnsID: "same", deviceToken: String(repeating: "ef", count: 32)))
        #expect(try !store.containsNotification(apnsID: "other", deviceToken: nil))

        var again = sampleRecord(apnsID: "same", topic: "com.example.other")
        again.receivedAt = first.receivedAt + 1000
        try await store.save([again])
        #expect(try store.notification(apnsID: "same", deviceToken: first.deviceToken) == again)
        #expect(try store.count(matching: NotificationFilter(topic: "com.example.app")) == 1)
        #expect(try store.count(matching: NotificationFilter(topic: "com.example.other")) == 1)
        #expect(try store.count(matching: NotificationFilter()) == 2)
        // One save holding both devices' states keeps both.
        var displayedHere = first
        displayedHere.status = .displayed
        var displayedThere = elsewhere
        displayedThere.status = .displayed
        #expect(SQLiteStore.lastStates(of: [first, elsewhere, displayedHere, displayedThere]).count == 2)
    }

    /// Filters combine with AND; results are newest first and page with limit/offset; count agrees.
    @Test func filtersPagesAndCounts() async throws {
        let tokenA = String(repeating: "aa", count: 32)
        let tokenB = String(repeating: "bb", count: 32)
        var records: [NotificationRecord] = []
        for index in 0..<20 {
            records.append(sampleRecord(
                apnsID: "n\(index)", token: index % 2 == 0 ? tokenA : tokenB,
                topic: index % 4 < 2 ? "com.a" : "com.b", receivedAt: 1000 + Int64(index),
                status: index % 5 == 0 ? .displayed : .stored))
        }
        try await store.save(records)

        let all = try store.notifications(matching: NotificationFilter(), limit: 100, offset: 0)
        #expect(all.map(\.apnsID) == (0..<20).reversed().map { "n\($0)" })
        let page = try store.notifications(matching: NotificationFilter(), limit: 5, offset: 5)
        #expect(page.map(\.apnsID) == ["n14", "n13", "n12", "n11", "n10"])
        #expect(try store.notifications(matching: NotificationFilter(), limit: 5, offset: 100).isEmpty)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 0, offset: 0).isEmpty)

        let byToken = NotificationFilter(deviceToken: tokenA)
        #expect(try store.count(matching: byToken) == 10)
        #expect(try store.notifications(matching: byToken, limit: 3, offset: 0).map(\.apnsID) == ["n18", "n16", "n14"])

        let combined = NotificationFilter(deviceToken: tokenA, topic: "com.a", status: .displayed, since: 1005)
        let expected = records.filter {
            $0.deviceToken == tokenA && $0.topic == "com.a" && $0.status == .displayed && $0.receivedAt >= 1005
        }
        #expect(try store.notifications(matching: combined, limit: 100, offset: 0) == expected.reversed())
        #expect(try store.count(matching: combined) == expected.count)
        #expect(try store.count(matching: NotificationFilter(bundleID: "com.b")) == 10)
        #expect(try store.count(matching: NotificationFilter(since: 1015)) == 5)
        #expect(try store.count(matching: NotificationFilter(topic: "nope")) == 0)
    }

    /// unfinished() returns only non-final records, oldest first.
    @Test func listsUnfinishedOldestFirst() async throws {
        let statuses = NotificationStatus.allCases
        let records = statuses.enumerated().map { index, status in
            sampleRecord(apnsID: status.rawValue, receivedAt: 5000 - Int64(index), status: status)
        }
        try await store.save(records)
        let unfinished = try store.unfinished()
        #expect(unfinished.allSatisfy { !$0.status.isFinal })
        #expect(unfinished.map(\.apnsID) == ["extension-running", "delivering", "stored", "accepted"])
    }

    /// delete(matching:) removes exactly the matching records and reports how many.
    @Test func deletesMatching() async throws {
        let token = String(repeating: "cd", count: 32)
        try await store.save((0..<10).map { sampleRecord(apnsID: "d\($0)", token: $0 < 3 ? token : "other") })
        #expect(try store.delete(matching: NotificationFilter(deviceToken: token)) == 3)
        #expect(try store.count(matching: NotificationFilter()) == 7)
        #expect(try store.delete(matching: NotificationFilter(deviceToken: token)) == 0)
        #expect(try store.delete(matching: NotificationFilter()) == 7)
        #expect(try store.count(matching: NotificationFilter()) == 0)
    }

    /// Saves queued before a delete are committed before it runs.
    @Test func deleteSeesEarlierSaves() throws {
        store.save([sampleRecord(apnsID: "queued")]) { _ in }
        #expect(try store.delete(matching: NotificationFilter()) == 1)
    }

    /// prune drops final records older than the cutoff, keeps unfinished ones, then caps the final ones.
    @Test func prunesByAgeThenCount() async throws {
        var records: [NotificationRecord] = []
        for index in 0..<10 {
            // Even indexes are final; receivedAt 100…109.
            records.append(sampleRecord(apnsID: "p\(index)", receivedAt: 100 + Int64(index),
                                        status: index % 2 == 0 ? .displayed : .stored))
        }
        try await store.save(records)
        // Age: final records before 105 are p0, p2, p4.
        let counts = try store.prune(keepingAtMost: 100, receivedBefore: 105)
        #expect(counts.expired == 3 && counts.overflow == 0)
        #expect(try store.notification(apnsID: "p1") != nil)
        // Count: the cap counts final records only; unfinished ones (on their way to a device) are
        // never pruned. Remaining final: p6, p8; keeping 1 deletes p6.
        #expect(try store.prune(maxRecords: 1, olderThan: 0) == 1)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 10, offset: 0).map(\.apnsID)
            == ["p9", "p8", "p7", "p5", "p3", "p1"])
        // A negative cap sets no limit.
        #expect(try store.prune(maxRecords: -1, olderThan: 0) == 0)
        #expect(try store.count(matching: NotificationFilter()) == 6)
    }

    /// A synchronous write from inside a save completion (the writer thread) fails instead of deadlocking.
    @Test func synchronousWriteInsideCompletionFails() async throws {
        let store = self.store
        let error: (any Error)? = await withCheckedContinuation { continuation in
            store.save([sampleRecord()]) { _ in
                do {
                    try store.saveDevice(DeviceRecord(token: "t", environment: .development))
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(returning: error)
                }
            }
        }
        #expect((error as? StoreError)?.code == .wrongThread)
    }
}

extension SQLiteStoreNotificationTests {
    /// A prune larger than one chunk deletes everything it should, over several transactions.
    @Test func prunesInChunks() async throws {
        let total = SQLiteStore.pruneChunk * 2 + 10
        let records = (0..<total).map { sampleRecord(apnsID: "c\($0)", receivedAt: Int64($0), status: .expired) }
        try await store.save(records)
        let before = store.committedTransactions
        // Everything before `total - 100` is old; of the 100 left keep 30.
        let counts = try store.prune(keepingAtMost: 30, receivedBefore: Int64(total - 100))
        #expect(counts.expired == total - 100)
        #expect(counts.overflow == 70)
        #expect(store.committedTransactions - before >= 3)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 1, offset: 0).first?.apnsID
            == "c\(total - 1)")
        #expect(try store.count(matching: NotificationFilter()) == 30)
    }
}

extension SQLiteStoreNotificationTests {
    /// The count pass over several chunks keeps exactly the newest `maxRecords` final records in (received_at, seq)
    /// order — many share a received_at across chunk edges — and every unfinished one, however old.
    @Test func prunesBeyondTheCapAcrossChunksTiesAndUnfinishedRecords() async throws {
        let total = SQLiteStore.pruneChunk * 3 + 123
        let records = (0..<total).map { index in
            sampleRecord(apnsID: "t\(index)", receivedAt: Int64(index / 7), status: index % 5 == 0 ? .stored : .displayed)
        }
        try await store.save(records)
        let final = records.filter { $0.status == .displayed }
        let removed = Locked<[NotificationKey]>([])
        let counts = try store.prune(keepingAtMost: 400, receivedBefore: 0) { keys in removed.withLock { $0 += keys } }
        #expect(counts.expired == 0 && counts.overflow == final.count - 400)
        let kept = Set(try store.notifications(matching: NotificationFilter(), limit: total, offset: 0).map(\.apnsID))
        let expected = Set(records.filter { $0.status == .stored }.map(\.apnsID) + final.suffix(400).map(\.apnsID))
        #expect(kept == expected)
        // Every deleted record is told, once, with its device (its attachments are removed by that).
        let told = removed.withLock { $0 }
        #expect(told.count == final.count - 400)
        #expect(Set(told.map(\.apnsID)) == Set(final.dropLast(400).map(\.apnsID)))
        #expect(told.allSatisfy { $0.deviceToken == records[0].deviceToken })
        #expect(try store.prune(keepingAtMost: 400, receivedBefore: 0).overflow == 0)
    }

    /// No chunk of a prune sorts or walks a table on the writer (found by the soak: a chunk sorted every final
    /// record for its `OFFSET`, and the events' age pass walked the whole log by id when nothing was old; pushes
    /// stalled for up to a second each minute). Only the boundary, read once per pass on the read connection, sorts.
    @Test func pruneChunksFollowAnIndex() throws {
        let finalStatuses = SQLCondition(statusIn: NotificationStatus.allCases.filter(\.isFinal))
        func plan(_ sql: String) throws -> [String] {
            try store.read { connection in
                try connection.withStatement("EXPLAIN QUERY PLAN " + sql) { statement in
                    var details: [String] = []
                    while try statement.step() { details.append(statement.string(at: 3) ?? "") }
                    return details
                }
            }
        }
        let chunks = [SQLiteStore.pruneOverflowSQL(finalStatuses), SQLiteStore.finalCountSQL(finalStatuses),
                      SQLiteStore.pruneOldEventsSQL(byTime: true), SQLiteStore.pruneOldEventsSQL(byTime: false)]
        for sql in chunks {
            let details = try plan(sql)
            #expect(!details.isEmpty)
            #expect(!details.contains { $0.contains("TEMP B-TREE") || $0.hasPrefix("SCAN") }, "\(sql): \(details)")
        }
        #expect(try plan(SQLiteStore.pruneOverflowSQL(finalStatuses)).contains { $0.contains("notifications_received") })
        #expect(try plan(SQLiteStore.finalCountSQL(finalStatuses)).contains { $0.contains("COVERING INDEX") })
        #expect(try plan(SQLiteStore.pruneOldEventsSQL(byTime: true)).contains { $0.contains("events_time") })
        #expect(try plan(SQLiteStore.pruneOldEventsSQL(byTime: false)).contains { $0.contains("PRIMARY KEY (rowid<?)") })
    }
}

/// The text `?q=` searches: displayed parts then the payload, one per line, lowercased (Unicode too).
@Suite struct SearchTextTests {
    @Test func joinsDisplayedPartsAndPayloadLowercased() {
        var record = sampleRecord()
        record.payload = #"{"aps":{"alert":"hi"}}"#
        #expect(EncodedRow.searchText(of: record) == record.payload)
        record.payload = #"{"aps":{"alert":"Zebra ÉTÉ"}}"#
        #expect(EncodedRow.searchText(of: record) == #"{"aps":{"alert":"zebra été"}}"#)
        record.displayed = DisplayedContent()
        #expect(EncodedRow.searchText(of: record) == #"{"aps":{"alert":"zebra été"}}"#)
        record.displayed = DisplayedContent(title: "Title", body: "Body")
        #expect(EncodedRow.searchText(of: record) == "title\nbody\n" + #"{"aps":{"alert":"zebra été"}}"#)
    }
}
