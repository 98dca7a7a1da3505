// APNs Sandbox — resetting the store, or loading a snapshot into it, in one transaction.
import Foundation
import Sandbox
@testable import Store
import Synchronization
import Testing
import Support

@Suite struct SQLiteStoreResetTests {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let tokenA = String(repeating: "aa", count: 32)
    let tokenB = String(repeating: "bb", count: 32)

    init() throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.file("store.sqlite"))
    }

    private func draft(_ type: SandboxEventType, device: String? = nil, topic: String? = nil, data: String = #"{"n":1}"#) -> EventDraft {
        EventDraft(type: type, time: 1_000, deviceToken: device, topic: topic, data: Array(data.utf8))
    }

    private func save(_ records: [NotificationRecord], events: [EventDraft]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            store.save(records, events: events) { continuation.resume(with: $0) }
        }
    }

    private func announcement() -> @Sendable (StoreResetOutcome.Counts) -> EventDraft {
        { counts in
            EventDraft(type: .sandboxReset, time: 2_000, data: Array(#"{"notificationsRemoved":\#(counts.notificationsRemoved)}"#.utf8))
        }
    }

    /// A reset of everything empties notifications and events, keeps event ids and cursors growing, decides
    /// every device and app, adds the missing seeds, logs its announcement last (to the observer too) and
    /// leaves the caches in step.
    @Test func resetOfEverything() async throws {
        let a = sampleRecord(apnsID: "a", token: tokenA)
        let b = sampleRecord(apnsID: "b", token: tokenB)
        try await save([a, b], events: [draft(.pushAccepted, device: tokenA), draft(.pushAccepted, device: tokenB)])
        try store.saveDevice(DeviceRecord(token: tokenA, environment: .development, isOnline: false))
        try store.saveDevice(DeviceRecord(token: tokenB, environment: .development))
        try store.saveApp(AppRecord(bundleID: "com.example.app", teamID: "T"))
        try store.saveApp(AppRecord(bundleID: "com.runtime", teamID: "T"))
        let cursorBefore = try store.latestCursor()
        #expect(try store.device(token: tokenA)?.isOnline == false, "cached")
        let observed = Locked<[SandboxEvent]>([])
        store.observeEvents { events in observed.withLock { $0 += events } }

        var reset = StoreReset()
        reset.notifications = .everything
        reset.events = .everything
        let seedA = DeviceRecord(token: tokenA, environment: .development, isOnline: true, configuredAs: "seed")
        let seedC = DeviceRecord(token: String(repeating: "cc", count: 32), environment: .production)
        reset.device = { record in record.token == seedA.token ? .save(seedA) : .delete }
        reset.devicesToAdd = [seedA, seedC]
        reset.app = { record in record.bundleID == "com.example.app" ? .keep : .delete }
        reset.appsToAdd = [AppRecord(bundleID: "com.example.app", teamID: "OTHER"), AppRecord(bundleID: "com.seed", teamID: "T")]
        reset.announcement = announcement()
        let committed = Locked<StoreResetOutcome?>(nil)
        let outcome = try store.reset(reset) { outcome in committed.withLock { $0 = outcome } }

        #expect(outcome.counts.notificationsRemoved == 2)
        #expect(Set(outcome.removedNotifications.map(\.apnsID)) == ["a", "b"])
        #expect(outcome.counts.eventsRemoved == 2)
        #expect(try store.count(matching: NotificationFilter()) == 0)
        #expect(outcome.event?.id == 3, "ids go on after the deleted events")
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 10).map(\.type) == [.sandboxReset])
        #expect(observed.withLock { $0.map(\.id) } == [3])
        #expect(String(decoding: outcome.event?.data ?? [], as: UTF8.self) == #"{"notificationsRemoved":2}"#)
        #expect(committed.withLock { $0?.counts } == outcome.counts, "the caller's callback saw the outcome")
        // Devices: A rewritten (cache too), B gone, C added; the existing app kept as it was, a runtime one gone.
        #expect(try store.device(token: tokenA) == seedA)
        #expect(try store.device(token: tokenB) == nil)
        #expect(try store.device(token: seedC.token) == seedC)
        #expect(outcome.counts.devicesRemoved == 1 && outcome.counts.devicesWritten == 2)
        #expect(try store.apps().map(\.bundleID) == ["com.example.app", "com.seed"])
        #expect(try store.app(bundleID: "com.example.app")?.teamID == "T", "kept, not added over")
        #expect(try store.app(bundleID: "com.runtime") == nil)
        // A new record gets a cursor after every earlier one.
        try await store.save([sampleRecord(apnsID: "c", token: tokenA)])
        #expect(try store.latestCursor() > cursorBefore)
    }

    /// A scoped reset removes only the notifications of its devices or apps and the events about them
    /// (device events by token, notification events by their bundleId, rejected pushes by topic), never an
    /// earlier sandbox.reset event, and asks only about the devices it names.
    @Test func scopedResetRemovesOnlyItsScope() async throws {
        let a1 = sampleRecord(apnsID: "a1", token: tokenA, topic: "com.a")
        let b1 = sampleRecord(apnsID: "b1", token: tokenB, topic: "com.b")
        let a2 = sampleRecord(apnsID: "a2", token: tokenB, topic: "com.a")
        try await save([a1, b1, a2], events: [
            draft(.pushAccepted, device: tokenA, topic: "com.a", data: #"{"bundleId":"com.a"}"#),
            draft(.pushAccepted, device: tokenB, topic: "com.b", data: #"{"bundleId":"com.b"}"#),
            draft(.pushAccepted, device: tokenB, topic: "com.a", data: #"{"bundleId":"com.a"}"#),
            draft(.pushRejected, topic: "com.a.voip", data: #"{"reason":"BadTopic"}"#),
            draft(.pushRejected, topic: "com.b", data: #"{"reason":"BadTopic"}"#),
            draft(.deviceUpdated, device: tokenB, data: #"{"change":"created"}"#),
            draft(.sandboxReset, device: tokenB, topic: "com.a", data: #"{"bundleId":"com.a"}"#),
        ])
        try store.saveDevice(DeviceRecord(token: tokenA, environment: .development))
        try store.saveDevice(DeviceRecord(token: tokenB, environment: .development))

        var byApp = StoreReset()
        byApp.notifications = .matching(deviceTokens: [], bundleIDs: ["com.a"])
        byApp.events = .matching(deviceTokens: [], bundleIDs: ["com.a"])
        byApp.rejectedTopics = ["com.a", "com.a.voip"]
        let outcome = try store.reset(byApp)
        #expect(Set(outcome.removedNotifications.map(\.apnsID)) == ["a1", "a2"])
        #expect(outcome.counts.eventsRemoved == 3)
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 10).map(\.type)
            == [.pushAccepted, .pushRejected, .deviceUpdated, .sandboxReset])

        var byDevice = StoreReset()
        byDevice.notifications = .matching(deviceTokens: [tokenB], bundleIDs: [])
        byDevice.events = .matching(deviceTokens: [tokenB], bundleIDs: [])
        let asked = Locked<[String]>([])
        byDevice.device = { record in
            asked.withLock { $0.append(record.token) }
            return .delete
        }
        byDevice.devicesToDecide = [tokenB]
        let second = try store.reset(byDevice)
        #expect(second.removedNotifications.map(\.apnsID) == ["b1"])
        #expect(asked.withLock { $0 } == [tokenB])
        #expect(try store.device(token: tokenA) != nil && store.device(token: tokenB) == nil)
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 10).map(\.type) == [.pushRejected, .sandboxReset])
    }

    /// Inserted notifications (a snapshot's) read back exactly, in listing order; a failing part rolls the
    /// whole reset back: nothing was removed.
    @Test func insertsNotificationsAndRollsBackAsOne() async throws {
        var older = sampleRecord(apnsID: "older", token: tokenA, receivedAt: 1_000, status: .displayed)
        older.displayed = DisplayedContent(title: "T", attachments: [Attachment(identifier: "i", type: "image/png", size: 3, path: "x/i.png")])
        let newer = sampleRecord(apnsID: "newer", token: tokenA, receivedAt: 1_000, status: .stored)
        var load = StoreReset()
        load.notifications = .everything
        load.notificationsToInsert = [older, newer]
        try store.reset(load)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 10, offset: 0) == [newer, older])

        try store.write { connection in
            try connection.execute("CREATE TRIGGER refuse BEFORE INSERT ON notifications WHEN new.apns_id = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }
        var failing = StoreReset()
        failing.notifications = .everything
        failing.events = .everything
        failing.device = { _ in .delete }
        failing.notificationsToInsert = [sampleRecord(apnsID: "bad", token: tokenB)]
        try store.saveDevice(DeviceRecord(token: tokenB, environment: .development))
        #expect(throws: (any Error).self) { try store.reset(failing) }
        #expect(try store.count(matching: NotificationFilter()) == 2)
        #expect(try store.device(token: tokenB) != nil)
    }
}
