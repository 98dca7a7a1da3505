// APNs Sandbox — retention: no timer before start, a pass every interval, none after stop.
import Foundation
import Sandbox
import Store
import Support
import Testing

@Suite struct RetentionTests {
    /// Building the retention schedules nothing; `start()` arms one pass an interval ahead, which prunes
    /// and arms the next; `stop()` cancels it and nothing runs again.
    @Test func prunesFromStartUntilStop() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("store.sqlite"))
        let outbox = try SQLiteStore(path: directory.file("outbox.sqlite"))
        defer {
            store.close()
            outbox.close()
        }
        let clock = ManualClock(nowMilliseconds: 10_000_000)
        let sweeper = AttachmentSweeper(
            root: directory.file("attachments"),
            layout: .init(folder: { "\($0)/\($1)" }, apnsFolder: { $0 }), logger: Logger(label: "test", level: .error)
        ) { _, _ in false }
        var settings = Retention.Settings(
            maxRecords: 100, maxRecordAgeMilliseconds: 1_000, maxEvents: 100, maxEventAgeMilliseconds: 1_000,
            deliveryRetentionMilliseconds: 1_000)
        settings.intervalMilliseconds = 60_000
        let retention = Retention(
            store: store, outbox: outbox, clock: clock, settings: settings, attachments: sweeper,
            logger: Logger(label: "test", level: .error))
        try await store.save([sampleRecord(apnsID: "old", receivedAt: 1_000, status: .displayed)])

        #expect(clock.pendingTaskCount == 0 && !retention.isScheduled)
        clock.advance(byMilliseconds: 120_000)
        #expect(try store.notification(apnsID: "old") != nil, "not started: no pass")

        retention.start()
        retention.start()
        #expect(clock.pendingTaskCount == 1 && retention.isScheduled)
        clock.advance(byMilliseconds: 59_000)
        #expect(try store.notification(apnsID: "old") != nil)
        clock.advance(byMilliseconds: 1_000)
        // The pass runs on the retention queue; the next one is armed when it ends.
        #expect(try await eventually { try store.notification(apnsID: "old") == nil }, "pruned one interval after the start")
        #expect(try await eventually { clock.pendingTaskCount == 1 }, "the next pass is armed")

        // A jump (a virtual clock advanced) arms one pass at a time; pruneSoon prunes at the new time at once.
        try await store.save([sampleRecord(apnsID: "jumped", receivedAt: clock.nowMilliseconds, status: .displayed)])
        clock.advance(byMilliseconds: 10_000)
        retention.pruneSoon()
        #expect(try await eventually { try store.notification(apnsID: "jumped") == nil }, "pruned without waiting an interval")
        #expect(clock.pendingTaskCount == 1)

        retention.stop()
        #expect(clock.pendingTaskCount == 0 && !retention.isScheduled)
        try await store.save([sampleRecord(apnsID: "older", receivedAt: 2_000, status: .displayed)])
        clock.advance(byMilliseconds: 180_000)
        #expect(try store.notification(apnsID: "older") != nil, "stopped: no pass")
        retention.start()
        #expect(clock.pendingTaskCount == 0, "a stopped retention does not start again")
        sweeper.stop()
    }

    /// Polls `condition` for up to 5 s.
    private func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if try condition() { return true }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return try condition()
    }
}
