// APNs Sandbox — the memory store: the journal's bound and drop counts, and the same answers as the SQLite store.
import Foundation
import Sandbox
@testable import Store
import Synchronization
import Testing
import Support

@Suite struct MemoryStoreTests {
    private func openStore(notifications: Int = 1000, events: Int = 1000) throws -> MemoryStore {
        let store = MemoryStore(capacity: .init(notifications: notifications, events: events))
        try store.open()
        return store
    }

    private func save(_ records: [NotificationRecord], events: [EventDraft] = [], to store: any NotificationRepository) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            store.save(records, events: events) { continuation.resume(with: $0) }
        }
    }

    private func draft(_ type: SandboxEventType = .pushAccepted, token: String? = nil, time: Int64 = 1_700_000_000_000,
                       data: String = "{}") -> EventDraft {
        EventDraft(type: type, time: time, deviceToken: token, topic: "com.example.app", data: Array(data.utf8))
    }

    /// Past the bound the oldest records go, whatever their status; the drop is counted; listings, counts,
    /// lookups and the cursor speak of what is kept.
    @Test func keepsTheNewestNotificationsAndCountsTheDropped() async throws {
        let store = try openStore(notifications: 10)
        let dropped = Locked<[NotificationKey]>([])
        store.observeDrops { keys in dropped.withLock { $0 += keys } }
        let records = (0..<25).map { index in
            var record = sampleRecord(apnsID: "id-\(index)", receivedAt: 1_700_000_000_000 + Int64(index),
                                      status: index % 2 == 0 ? .displayed : .stored)
            if index % 2 == 0 { record.outcome = index % 4 == 0 ? .direct : .processed }
            return record
        }
        for record in records {
            try await save([record], to: store)
        }
        #expect(store.droppedNotifications == 15)
        // Announced for their attachment files: not the ones shown without an extension (they have none).
        #expect(dropped.withLock { $0.map(\.apnsID) } == (0..<15).filter { $0 % 4 != 0 }.map { "id-\($0)" })
        #expect(try store.count(matching: NotificationFilter()) == 10)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 100, offset: 0).map(\.apnsID)
            == (15..<25).reversed().map { "id-\($0)" })
        #expect(try store.notification(apnsID: "id-14") == nil)
        #expect(try store.notification(apnsID: "id-15") == records[15])
        #expect(try store.count(matching: NotificationFilter(status: .displayed)) == 5)
        #expect(try store.count(matching: NotificationFilter(status: .stored)) == 5)
        #expect(try store.latestCursor() == 25)
        #expect(try store.unfinished().map(\.apnsID) == stride(from: 15, to: 25, by: 2).map { "id-\($0)" })
        #expect(store.journal == .init(notifications: 10, events: 0, droppedNotifications: 15, droppedEvents: 0))
    }

    /// A notification dropped while still on its way is kept again, as new, when its next state is saved.
    @Test func aDroppedNotificationInFlightComesBackWithItsNextState() async throws {
        let store = try openStore(notifications: 2)
        var first = sampleRecord(apnsID: "first", status: .extensionRunning)
        try await save([first, sampleRecord(apnsID: "second"), sampleRecord(apnsID: "third")], to: store)
        #expect(try store.notification(apnsID: "first") == nil)
        first.status = .displayed
        try await save([first], to: store)
        #expect(try store.notification(apnsID: "first")?.status == .displayed)
        #expect(try store.notifications(matching: NotificationFilter(), limit: 10, offset: 0).map(\.apnsID) == ["first", "third"])
        #expect(store.droppedNotifications == 2)
    }

    /// Events past their bound go oldest first and are counted; ids go on, never reused; a read after an id
    /// older than the oldest kept starts at the oldest kept.
    @Test func keepsTheNewestEventsAndCountsTheDropped() async throws {
        let store = try openStore(events: 5)
        let observed = Locked<[Int64]>([])
        store.observeEvents { events in observed.withLock { $0 += events.map(\.id) } }
        for index in 0..<4 {
            try await save([sampleRecord(apnsID: "p\(index)")], events: [draft(), draft(.notificationDisplayed)], to: store)
        }
        #expect(store.droppedEvents == 3)
        #expect(try store.latestEventID() == 8)
        #expect(try store.oldestEventID() == 4)
        #expect(try store.events(after: 0, matching: EventFilter(), limit: 100).map(\.id) == [4, 5, 6, 7, 8])
        #expect(try store.events(after: 6, matching: EventFilter(), limit: 100).map(\.id) == [7, 8])
        #expect(try store.events(after: 0, matching: EventFilter(types: [.notificationDisplayed]), limit: 2).map(\.id) == [4, 6])
        // The observer saw every event once, in id order, dropped or not.
        try await waitUntil { observed.withLock { $0.count } == 8 }
        #expect(observed.withLock { $0 } == Array(1...8))
    }

    /// Completions run in save order, each before the observer hears of that save's events, and a save is
    /// visible as soon as the call returns.
    @Test func completionsAndEventsInSaveOrder() async throws {
        let store = try openStore()
        let log = Locked<[String]>([])
        store.observeEvents { events in log.withLock { $0 += events.map { "event \($0.id)" } } }
        let done = Locked(0)
        for index in 0..<50 {
            let record = sampleRecord(apnsID: "n\(index)")
            store.save([record], events: [draft()]) { _ in
                log.withLock { $0.append("saved n\(index)") }
                done.withLock { $0 += 1 }
            }
            #expect(try store.notification(apnsID: "n\(index)") != nil)
        }
        try await waitUntil { done.withLock { $0 } == 50 && log.withLock { $0.count } == 100 }
        let entries = log.withLock { $0 }
        for index in 0..<50 {
            let saved = try #require(entries.firstIndex(of: "saved n\(index)"))
            let event = try #require(entries.firstIndex(of: "event \(index + 1)"))
            #expect(saved < event)
            if index > 0 { #expect(try #require(entries.firstIndex(of: "saved n\(index - 1)")) < saved) }
        }
    }

    /// A push shown directly that replaced one whose extension ran (same apns-id and device: the same attachment
    /// folder) is announced when dropped; one shown directly with attachments (a snapshot's) is too.
    @Test func aDropInheritsTheFilesOfTheReplacedPush() async throws {
        let store = try openStore(notifications: 1)
        let dropped = Locked<[String]>([])
        store.observeDrops { keys in dropped.withLock { $0 += keys.map(\.apnsID) } }
        func shown(_ id: String, at time: Int64, _ outcome: DisplayOutcome, attachments: Int = 0) -> NotificationRecord {
            var record = sampleRecord(apnsID: id, receivedAt: time, status: .displayed)
            record.outcome = outcome
            record.displayed = DisplayedContent(
                title: "t", attachments: (0..<attachments).map { Attachment(identifier: "a\($0)", type: "image/png", size: 1, path: "p") })
            return record
        }
        try await save([shown("same", at: 1, .processed)], to: store)
        try await save([shown("same", at: 2, .direct)], to: store)
        try await save([shown("plain", at: 3, .direct)], to: store)
        try await save([shown("attached", at: 4, .direct, attachments: 1)], to: store)
        try await save([shown("last", at: 5, .direct)], to: store)
        #expect(dropped.withLock { $0 } == ["same", "attached"])
        #expect(store.droppedNotifications == 3)
    }

    /// 20,000 pushes through a journal of 100: the dropped slots in front are cut off as they pile up, and every kept
    /// record is still found by its key (and a replaced state in its place) after each cut.
    @Test func dropsKeepTheSlotsBoundedAndTheKeptRecordsFound() async throws {
        let store = try openStore(notifications: 100)
        for index in 0..<20_000 {
            store.save([sampleRecord(apnsID: "id-\(index)", receivedAt: 1_700_000_000_000 + Int64(index), status: .stored)]) { _ in }
            if index % 5000 == 4999 {
                var newest = sampleRecord(apnsID: "id-\(index)", receivedAt: 1_700_000_000_000 + Int64(index), status: .displayed)
                newest.outcome = .direct
                try await save([newest], to: store)
                #expect(try store.notification(apnsID: "id-\(index)")?.status == .displayed)
            }
        }
        try await save([], events: [draft()], to: store)
        #expect(store.state.withLock { $0.notifications.slotCount } <= 2 * 4097 + 100)
        for index in 19_900..<20_000 {
            #expect(try store.notification(apnsID: "id-\(index)")?.receivedAt == 1_700_000_000_000 + Int64(index))
        }
        #expect(try store.notification(apnsID: "id-19899") == nil)
        #expect(try store.count(matching: NotificationFilter(status: .stored)) == 99)
        #expect(try store.count(matching: NotificationFilter(status: .displayed)) == 1)
        #expect(store.droppedNotifications == 19_900)
    }

    /// A load tool that sends the same apns-id every time replaces the record each time (a new push, a new
    /// seq): the journal holds one record and a bounded number of slots, however many pushes came.
    @Test func reusedApnsIDsKeepTheJournalBounded() async throws {
        let store = try openStore(notifications: 100)
        for index in 0..<20_000 {
            let record = sampleRecord(apnsID: "same", receivedAt: 1_700_000_000_000 + Int64(index), status: .displayed)
            store.save([record]) { _ in }
        }
        try await save([], events: [draft()], to: store)
        #expect(try store.count(matching: NotificationFilter()) == 1)
        #expect(try store.latestCursor() == 20_000)
        #expect(store.state.withLock { $0.notifications.slotCount } <= 4098)
        #expect(try store.notification(apnsID: "same")?.receivedAt == 1_700_000_019_999)
    }

    /// A synchronous write takes its place among the saves: its `committed` runs after the completions of the
    /// saves before it and before those after it, and its event reaches the observer in id order, also when
    /// saves from other threads log events meanwhile.
    @Test func resetsRunInOrderWithTheSaves() async throws {
        let store = try openStore(events: 100_000)
        let log = Locked<[String]>([])
        let observed = Locked<[Int64]>([])
        store.observeEvents { events in observed.withLock { $0 += events.map(\.id) } }
        store.save([sampleRecord(apnsID: "before")], events: [draft()]) { _ in log.withLock { $0.append("before") } }
        var reset = StoreReset()
        reset.announcement = { _ in EventDraft(type: .sandboxReset, time: 1, data: Array("{}".utf8)) }
        let background = Task.detached {
            for index in 0..<2000 {
                store.save([sampleRecord(apnsID: "noise-\(index)")], events: [draftForNoise()]) { _ in }
            }
        }
        try store.reset(reset) { _ in log.withLock { $0.append("reset") } }
        store.save([sampleRecord(apnsID: "after")], events: [draft()]) { _ in log.withLock { $0.append("after") } }
        await background.value
        try await save([], events: [draft()], to: store)
        #expect(log.withLock { $0 } == ["before", "reset", "after"])
        let ids = observed.withLock { $0 }
        #expect(ids == Array(1...Int64(ids.count)), "events reach the observer once each, in id order")
        #expect(ids.count == 2004)
    }

    /// Closed (or not yet opened), every call fails with `closed` and a save's completion says so.
    @Test func closedStoreRefusesWork() async throws {
        let store = MemoryStore(capacity: .init(notifications: 10, events: 10))
        #expect(throws: StoreError.self) { try store.count(matching: NotificationFilter()) }
        try store.open()
        store.close()
        #expect(store.isClosed)
        await #expect(throws: StoreError.self) { try await save([sampleRecord()], to: store) }
        #expect(throws: StoreError.self) { try store.device(token: "x") }
    }

    /// The same records, queries, deletes, prunes and resets give the same answers from both stores.
    @Test func answersAsTheSQLiteStoreDoes() async throws {
        let directory = try TemporaryDirectory()
        let sqlite = try SQLiteStore(path: directory.file("store.sqlite"))
        let memory = try openStore()
        let stores: [any SandboxStore] = [sqlite, memory]
        let tokens = ["aa" + String(repeating: "0", count: 62), "bb" + String(repeating: "1", count: 62)]
        var records: [NotificationRecord] = []
        for index in 0..<40 {
            var record = sampleRecord(
                apnsID: String(format: "%08X-0000-4000-8000-%012d", index, index), token: tokens[index % 2],
                topic: index % 3 == 0 ? "com.example.other" : "com.example.app",
                // Not in receipt order: the stores must sort, not trust insertion.
                receivedAt: 1_700_000_000_000 + Int64((index * 7) % 13),
                status: [.displayed, .stored, .discarded, .deliveredSilent][index % 4])
            record.pushType = index % 5 == 0 ? "background" : "alert"
            record.outcome = index % 4 == 0 ? (index % 8 == 0 ? .processed : .originalTimeout) : nil
            if index % 4 == 0 { record.displayed = DisplayedContent(title: "Title \(index)", body: index == 12 ? "Breaking NEWS" : "body") }
            records.append(record)
        }
        for store in stores {
            try await save(Array(records[0..<20]), to: store)
            try await save(Array(records[20...]), to: store)
            // An update in place (same apns-id, same device).
            var updated = records[3]
            updated.status = .displayed
            try await save([updated], to: store)
        }
        var filters: [NotificationFilter] = [
            NotificationFilter(), NotificationFilter(deviceToken: tokens[0]), NotificationFilter(topic: "com.example.other"),
            NotificationFilter(bundleID: "com.example.app"), NotificationFilter(status: .displayed),
            NotificationFilter(since: 1_700_000_000_006), NotificationFilter(after: 25),
        ]
        var filter = NotificationFilter()
        filter.until = 1_700_000_000_005
        filters.append(filter)
        filter = NotificationFilter()
        filter.statuses = [.stored, .discarded]
        filters.append(filter)
        for search in ["breaking news", "0000000A", "BB1", "other", "title 2", "\"k\":1", "%", "nothing here", ""] {
            filter = NotificationFilter()
            filter.search = search
            filters.append(filter)
        }
        filter = NotificationFilter(topic: "com.example.app")
        filter.pushTypes = ["background"]
        filters.append(filter)
        filter = NotificationFilter()
        filter.outcomes = [.originalTimeout]
        filters.append(filter)
        for filter in filters {
            let answers = try stores.map { try $0.notifications(matching: filter, limit: 100, offset: 0).map(\.apnsID) }
            #expect(answers[0] == answers[1], "\(filter)")
            // Equal answers prove something only when there is something to answer.
            #expect(answers[0].isEmpty == ["%", "nothing here"].contains(filter.search ?? "-"), "\(filter)")
            #expect(try stores.map { try $0.count(matching: filter) } == [answers[0].count, answers[0].count], "\(filter)")
            let pages = try stores.map { try $0.notifications(matching: filter, limit: 3, offset: 2).map(\.apnsID) }
            #expect(pages[0] == pages[1], "\(filter)")
        }
        #expect(try sqlite.unfinished().map(\.apnsID) == memory.unfinished().map(\.apnsID))
        // The cursor's value is each store's own (SQLite's upsert uses up a sequence number); what it selects is the same.
        for store in stores {
            let cursor = try store.latestCursor()
            #expect(try store.count(matching: NotificationFilter(after: cursor)) == 0)
            try await save([sampleRecord(apnsID: "after-the-cursor")], to: store)
            #expect(try store.notifications(matching: NotificationFilter(after: cursor), limit: 10, offset: 0).map(\.apnsID) == ["after-the-cursor"])
            try store.deleteNotifications(matching: NotificationFilter(after: cursor))
        }
        #expect(try sqlite.notification(apnsID: records[7].apnsID) == memory.notification(apnsID: records[7].apnsID))

        // Deletes, prunes and a scoped reset remove the same records.
        let deleted = try stores.map { try $0.deleteNotifications(matching: NotificationFilter(topic: "com.example.other")).map(\.apnsID).sorted() }
        #expect(deleted[0] == deleted[1] && !deleted[0].isEmpty)
        let pruned = try stores.map { try $0.prune(keepingAtMost: 10, receivedBefore: 1_700_000_000_002, removed: { _ in }) }
        #expect(pruned[0] == pruned[1])
        var reset = StoreReset()
        reset.notifications = .matching(deviceTokens: [tokens[1]], bundleIDs: [])
        let outcomes = try stores.map { try $0.reset(reset).removedNotifications.map(\.apnsID).sorted() }
        #expect(outcomes[0] == outcomes[1])
        let remaining = try stores.map { try $0.notifications(matching: NotificationFilter(), limit: 100, offset: 0).map(\.apnsID) }
        #expect(remaining[0] == remaining[1])
        sqlite.close()
    }

    /// Devices and apps: listing order, read-modify-write, registration, and a reset's device and app decisions
    /// and announcement, as the SQLite store does them.
    @Test func devicesAppsAndResetsAsTheSQLiteStoreDoes() async throws {
        let directory = try TemporaryDirectory()
        let sqlite = try SQLiteStore(path: directory.file("store.sqlite"))
        let memory = try openStore()
        for store in [sqlite, memory] as [any SandboxStore] {
            for index in 0..<5 {
                try store.saveDevice(DeviceRecord(token: "device-\(index)", environment: .development))
            }
            try store.deleteDevice(token: "device-1")
            let added = try await withCheckedThrowingContinuation { continuation in
                store.registerDevice(DeviceRecord(token: "device-2", environment: .production)) { continuation.resume(with: $0) }
            }
            #expect(!added)
            let modification = try store.modifyDevice(token: "device-3", { device in
                guard var device else { return .keep }
                device.locale = "fr_FR"
                return .save(device)
            }, committed: { _, _ in })
            #expect(modification.after?.locale == "fr_FR")
            try store.saveApp(AppRecord(bundleID: "com.b", teamID: "T"))
            try store.saveApp(AppRecord(bundleID: "com.a", teamID: "T"))
            try await save([], events: [draft(token: "device-0"), draft(.pushRejected, data: #"{"bundleId":"com.a"}"#)], to: store)

            var reset = StoreReset()
            reset.events = .matching(deviceTokens: ["device-0"], bundleIDs: ["com.a"])
            reset.device = { $0.token == "device-4" ? .delete : .keep }
            reset.devicesToAdd = [DeviceRecord(token: "device-9", environment: .development)]
            reset.app = { $0.bundleID == "com.b" ? .delete : .keep }
            reset.announcement = { counts in
                EventDraft(type: .sandboxReset, time: 1, data: Array(#"{"events":\#(counts.eventsRemoved)}"#.utf8))
            }
            let outcome = try store.reset(reset)
            #expect(outcome.counts.eventsRemoved == 2)
            #expect(outcome.counts.devicesRemoved == 1 && outcome.counts.devicesWritten == 1)
            #expect(outcome.counts.appsRemoved == 1)
            #expect(outcome.event?.id == 3)
        }
        #expect(try sqlite.devices(limit: 10, offset: 0) == memory.devices(limit: 10, offset: 0))
        #expect(try memory.devices(limit: 10, offset: 0).map(\.token) == ["device-0", "device-2", "device-3", "device-9"])
        #expect(try sqlite.devices(limit: 2, offset: 1) == memory.devices(limit: 2, offset: 1))
        #expect(try sqlite.apps() == memory.apps())
        #expect(try sqlite.events(after: 0, matching: EventFilter(), limit: 10) == memory.events(after: 0, matching: EventFilter(), limit: 10))
        sqlite.close()
    }

    /// A kept event holds its JSON in a buffer of its size, not in the room its writer reserved.
    @Test func keptEventsHoldNoSpareRoom() async throws {
        let store = try openStore()
        var data: [UInt8] = []
        data.reserveCapacity(4096)
        data += Array(#"{"apnsId":"x"}"#.utf8)
        try await save([], events: [EventDraft(type: .pushAccepted, time: 1, data: data)], to: store)
        let kept = try store.events(after: 0, matching: EventFilter(), limit: 10)
        #expect(kept.map(\.data) == [data])
        #expect((kept.first?.data.capacity ?? .max) < 100)
    }

    /// Records of every shape (one app, with badge 0 or none, uninstalled; several apps; keys; a configuration
    /// fingerprint; long and odd tokens; times and badges past what the packed form holds) come back as saved, in
    /// the order first saved, through changes of shape.
    @Test func devicesOfEveryShapeComeBackAsSaved() throws {
        let memory = try openStore()
        let hex = String(repeating: "ab", count: 32)
        let records = [
            DeviceRecord(token: hex, environment: .production, locale: "fr_FR", isOnline: false,
                         apps: [InstalledAppRecord(bundleID: "com.a", installedAt: 3, uninstalledAt: 0, badge: 0)],
                         createdAt: 9, isAutoRegistered: true),
            DeviceRecord(token: String(repeating: "0f", count: 100), environment: .development,
                         apps: [InstalledAppRecord(bundleID: "com.a", installedAt: 1), InstalledAppRecord(bundleID: "com.b", installedAt: 2, badge: 4)]),
            DeviceRecord(token: "Device-Upper", environment: .development, keys: ["com.a": "a2V5"]),
            DeviceRecord(token: "cd", environment: .development, apps: [InstalledAppRecord(bundleID: "com.c", installedAt: -5)],
                         configuredAs: "fingerprint"),
            DeviceRecord(token: "ef01", environment: .production, apps: [InstalledAppRecord(bundleID: "com.c", installedAt: -5)],
                         createdAt: .max),
            DeviceRecord(token: "ef02", environment: .production,
                         apps: [InstalledAppRecord(bundleID: "com.c", installedAt: 1, badge: Int(Int32.max) + 1)], createdAt: 1 << 40),
        ]
        // Packed: one installed app, with a badge of 0 or none, offline or not, created before or after the install.
        let packed = [
            DeviceRecord(token: "01", environment: .production, locale: "fr_FR", isOnline: false,
                         apps: [InstalledAppRecord(bundleID: "com.a", installedAt: 100, badge: 0)], createdAt: 40,
                         isAutoRegistered: true),
            DeviceRecord(token: "02", environment: .development,
                         apps: [InstalledAppRecord(bundleID: "com.b", installedAt: 100)], createdAt: 160),
        ]
        for record in records + packed { try memory.saveDevice(record) }
        #expect(try memory.devices(limit: 10, offset: 0) == records + packed)
        // A packed record made whole (keys) and back keeps its place.
        var keyed = packed[0]
        keyed.keys = ["com.a": "a2V5"]
        try memory.saveDevice(keyed)
        #expect(try memory.devices(limit: 10, offset: 0) == records + [keyed, packed[1]])
        try memory.saveDevice(packed[0])
        for record in packed { try memory.deleteDevice(token: record.token) }
        var reshaped = records
        reshaped[0].keys = ["com.a": "a2V5"]
        reshaped[1].apps = [InstalledAppRecord(bundleID: "com.b", installedAt: 2)]
        for record in reshaped.prefix(2) { try memory.saveDevice(record) }
        #expect(try memory.devices(limit: 10, offset: 0) == reshaped)
        #expect(try memory.device(token: hex) == reshaped[0] && memory.device(token: hex.uppercased()) == nil)
        #expect(try memory.deleteDevice(token: "cd") && memory.deviceCountBound() == 5)
        #expect(try memory.devices(limit: 2, offset: 1) == Array(reshaped[1...2]))
    }
}

private func draftForNoise() -> EventDraft {
    EventDraft(type: .pushAccepted, time: 1, deviceToken: "noise", topic: "com.example.app", data: Array("{}".utf8))
}

/// Polls `condition` every 10 ms for up to 10 s.
private func waitUntil(_ condition: () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(10)
    while !condition() {
        guard Date() < deadline else { throw CancellationError() }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
}
