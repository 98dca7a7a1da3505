// APNs Sandbox — a full store (maxSizeBytes, SQLite's own SQLITE_FULL): failing writes, health, recovery.
import Foundation
import Glibc
import Sandbox
@testable import Store
import Synchronization
import TestProcessSupport
import Testing
import Support

@Suite(.scaledTimeLimit(minutes: 1))
struct SQLiteStoreHealthTests {
    private static let limit: Int64 = 512 * 1024

    private static let deviceA = String(repeating: "aa", count: 32)
    private static let deviceB = String(repeating: "bb", count: 32)

    /// Saves batches of 20 records, to device A and B in turn, until one fails; returns the apns-ids
    /// committed and the failure.
    private func fill(_ store: SQLiteStore, prefix: String) async -> (committed: [String: String], failure: (any Error)?) {
        var committed: [String: String] = [:]
        for batch in 0..<1000 {
            let token = batch % 2 == 0 ? Self.deviceA : Self.deviceB
            let records = (0..<20).map {
                sampleRecord(apnsID: "\(prefix)-\(batch)-\($0)", token: token, receivedAt: 1_700_000_000_000 + Int64(batch))
            }
            do {
                try await store.save(records)
                for record in records { committed[record.apnsID] = token }
            } catch {
                return (committed, error)
            }
        }
        return (committed, nil)
    }

    private func waitUntil(_ timeout: Double = 5, _ condition: () -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition()
    }

    /// At the size limit a save fails with SQLite's SQLITE_FULL and the health is `failing` with its
    /// message; everything committed before stays readable; deleting records frees pages, the next
    /// probe commits and the store is healthy again, and saves commit.
    @Test func fullStoreFailsThenRecoversAfterDeletes() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("full.sqlite")
        let store = try SQLiteStore(path: path, maxSizeBytes: Self.limit)
        defer { store.close() }
        #expect(store.openingReport.maxPageCount == Self.limit / store.openingReport.pageSize)
        let changes = Locked<[StoreHealth]>([])
        store.observeHealth { health in changes.withLock { $0.append(health) } }

        let (committed, failure) = await fill(store, prefix: "a")
        let error = try #require(failure as? StoreError)
        #expect(error.primaryResultCode == 13, "\(error)")  // SQLITE_FULL
        #expect(store.health == .failing(reason: "database or disk is full"))
        #expect(try store.count(matching: NotificationFilter()) == committed.count)
        // Still full: the probe cannot commit either.
        try await Task.sleep(nanoseconds: 1_300_000_000)
        #expect(!store.health.isHealthy)

        let onA = committed.filter { $0.value == Self.deviceA }.count
        let deleted = try store.deleteNotifications(matching: NotificationFilter(deviceToken: Self.deviceA))
        #expect(deleted.count == onA)
        #expect(try await waitUntil { store.health.isHealthy }, "health: \(store.health)")
        try await store.save([sampleRecord(apnsID: "after")])
        #expect(try store.notification(apnsID: "after", deviceToken: nil) != nil)
        #expect(changes.withLock { $0 } == [.failing(reason: "database or disk is full"), .healthy])
        // The probe's row is never seen and not left behind.
        #expect(try store.apps().isEmpty)
    }

    /// Space freed by another process, with no traffic at all: the writer's probe (about once a second)
    /// notices and the store is healthy again; nothing that was committed is lost, and the file passes
    /// an integrity check.
    @Test func probeNoticesSpaceFreedWithoutTraffic() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("probe.sqlite")
        let store = try SQLiteStore(path: path, maxSizeBytes: Self.limit)
        let (committed, failure) = await fill(store, prefix: "b")
        #expect((failure as? StoreError)?.primaryResultCode == 13)
        #expect(!store.health.isHealthy)

        // Another connection (another process would do the same) deletes device A's records.
        let other = try SQLiteConnection(path: path, readOnly: false)
        try other.execute("DELETE FROM notifications WHERE device_token = '\(Self.deviceA)'")
        other.close()
        #expect(try await waitUntil { store.health.isHealthy }, "health: \(store.health)")
        try await store.save([sampleRecord(apnsID: "later", token: Self.deviceB)])
        let kept = Set(committed.filter { $0.value == Self.deviceB }.keys).union(["later"])
        let stored = Set(try store.notifications(matching: NotificationFilter(), limit: 100_000, offset: 0).map(\.apnsID))
        #expect(stored == kept)
        store.close()

        let reopened = try SQLiteStore(path: path, integrityCheck: IntegrityCheck(mode: .full))
        #expect(reopened.openingReport.integrity.outcome == .passed)
        #expect(try reopened.count(matching: NotificationFilter()) == kept.count)
        reopened.close()
    }

    /// Opening a file that is already at a lower size limit: the limit stays at the file's size, the
    /// report says it is at its limit, the store is `failing` before any write, and a save that needs
    /// a page fails.
    @Test func fileLargerThanTheLimitIsReportedAtItsLimit() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("large.sqlite")
        let unlimited = try SQLiteStore(path: path)
        try await unlimited.save((0..<2000).map { sampleRecord(apnsID: "c-\($0)") })
        unlimited.close()
        let store = try SQLiteStore(path: path, maxSizeBytes: 64 * 1024)
        defer { store.close() }
        let report = store.openingReport
        #expect(report.maxPageCount == report.pageCount)
        #expect(report.isAtSizeLimit)
        #expect(report.headroomBytes == report.freePageCount * report.pageSize)
        #expect(store.health == .failing(reason: "database or disk is full"))
        await #expect(throws: StoreError.self) {
            try await store.save((0..<50).map { sampleRecord(apnsID: "over-\($0)") })
        }
        #expect(!store.health.isHealthy)
    }
}
