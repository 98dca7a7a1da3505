// APNs Sandbox — opening, reopening, closing and bad files.
import Foundation
import Glibc
import Sandbox
@testable import Store
import Testing

@Suite struct SQLiteStoreLifecycleTests {
    /// Records, devices and apps survive close and reopen; reopening applies no migration twice.
    @Test func persistsAcrossReopen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("durable.sqlite")
        let record = sampleRecord(status: .stored)
        let device = DeviceRecord(token: "tok", environment: .production, keys: ["com.a": "a2V5"], createdAt: 7)
        do {
            let store = try SQLiteStore(path: path)
            try await store.save([record])
            try store.saveDevice(device)
            try store.saveApp(AppRecord(bundleID: "com.a", teamID: "TEAM"))
            store.close()
        }
        for _ in 0..<2 {
            let store = try SQLiteStore(path: path)
            #expect(try store.notification(apnsID: record.apnsID) == record)
            #expect(try store.unfinished() == [record])
            #expect(try store.device(token: "tok") == device)
            #expect(try store.app(bundleID: "com.a")?.teamID == "TEAM")
            let versions = try store.read { connection in
                try connection.withStatement("SELECT version FROM schema_version") { statement in
                    var versions: [Int] = []
                    while try statement.step() { versions.append(statement.int(at: 0)) }
                    return versions
                }
            }
            #expect(versions == [Schema.latestVersion])
            store.close()
        }
    }

    /// A file at schema version 3 (apns-id unique on its own) opens at the latest version with its rows,
    /// their sequence numbers and the indexes intact, and then takes one apns-id on two devices.
    @Test func migratesVersion3RowsToPerDeviceAPNsIDs() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v3.sqlite")
        let old = sampleRecord(apnsID: "kept", status: .displayed)
        do {
            let connection = try SQLiteConnection(path: path, readOnly: false)
            try connection.execute("CREATE TABLE schema_version(version INTEGER NOT NULL)")
            for migration in Schema.migrations where migration.version <= 3 {
                for statement in migration.statements { try connection.execute(statement) }
            }
            try connection.execute("INSERT INTO schema_version(version) VALUES (3)")
            try connection.withStatement(
                "INSERT INTO notifications(seq, apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record) VALUES (41, ?, ?, ?, ?, ?, ?, ?, ?)"
            ) { statement in
                try statement.bind(old.apnsID, at: 1)
                try statement.bind(old.deviceToken, at: 2)
                try statement.bind(old.topic, at: 3)
                try statement.bind(old.bundleID, at: 4)
                try statement.bind(old.status.rawValue, at: 5)
                try statement.bind(old.receivedAt, at: 6)
                try statement.bind(old.receivedAt, at: 7)
                try statement.bind(NotificationRecordCodec.encode(old), at: 8)
                try statement.step()
            }
            connection.close()
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try store.notification(apnsID: "kept") == old)
        #expect(try store.count(matching: NotificationFilter(deviceToken: old.deviceToken, status: .displayed)) == 1)
        var tablet = sampleRecord(apnsID: "kept", token: String(repeating: "cd", count: 32))
        tablet.receivedAt = old.receivedAt + 1
        try await store.save([tablet, sampleRecord(apnsID: "next")])
        #expect(try store.count(matching: NotificationFilter()) == 3)
        let (seqs, indexes) = try store.read { connection in
            let seqs = try connection.withStatement("SELECT seq FROM notifications ORDER BY seq") { statement in
                var values: [Int] = []
                while try statement.step() { values.append(statement.int(at: 0)) }
                return values
            }
            let indexes = try connection.withStatement(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notifications' AND sql IS NOT NULL ORDER BY name"
            ) { statement in
                var names: [String] = []
                while try statement.step() { names.append(statement.string(at: 0) ?? "") }
                return names
            }
            return (seqs, indexes)
        }
        #expect(seqs == [41, 42, 43], "new rows are numbered after the copied ones")
        #expect(indexes == ["notifications_device_received", "notifications_device_status", "notifications_received",
                            "notifications_status_received", "notifications_topic"])
    }

    /// The database is WAL-mode, readable only by its owner, and uses FULL sync unless asked otherwise.
    @Test func createsPrivateWALFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("private.sqlite")
        let store = try SQLiteStore(path: path)
        try await store.save([sampleRecord()])
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            #expect(stat(file, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600, "\(file)")
        }
        let mode = try store.read { connection in
            try connection.withStatement("PRAGMA journal_mode") { statement in
                try statement.step() ? statement.string(at: 0) : nil
            }
        }
        #expect(mode == "wal")
        store.close()
        let normal = try SQLiteStore(path: directory.file("normal.sqlite"), synchronous: .normal)
        try await normal.save([sampleRecord()])
        #expect(try normal.count(matching: NotificationFilter()) == 1)
    }

    /// A file that is not an SQLite database fails to open as damaged (SQLITE_NOTADB) with a clear message.
    @Test func rejectsNonSQLiteFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("garbage.sqlite")
        try Data(String(repeating: "this is not a database\n", count: 200).utf8).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: StoreError.self) { try SQLiteStore(path: path) }
        #expect(error.code == .corrupt)
        #expect(error.resultCode & 0xFF == 26)  // SQLITE_NOTADB
        #expect(error.description.contains("not a database"))
        #expect(error.description.contains(path))
    }

    /// A path in a missing directory and `:memory:` are clear errors.
    @Test func rejectsUnusablePaths() throws {
        let missing = try #require(throws: StoreError.self) {
            try SQLiteStore(path: "/nonexistent-dir-\(UUID().uuidString)/x.sqlite")
        }
        #expect(missing.code == .sqlite)
        #expect(missing.description.contains("unable to open"))
        let memory = try #require(throws: StoreError.self) { try SQLiteStore(path: ":memory:") }
        #expect(memory.code == .invalidPath)
    }

    /// A database from a newer build (higher schema version) is refused, not silently used.
    @Test func refusesNewerSchema() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("newer.sqlite")
        let store = try SQLiteStore(path: path)
        _ = try store.write { connection in
            try connection.execute("UPDATE schema_version SET version = 999")
            return 0
        }
        store.close()
        let error = try #require(throws: StoreError.self) { try SQLiteStore(path: path) }
        #expect(error.code == .unsupportedSchema)
    }

    /// close() commits what was queued; afterwards saves fail at once and other calls throw `closed`.
    @Test func closeDrainsThenFailsFast() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("closing.sqlite")
        let store = try SQLiteStore(path: path)
        let results = Latch<Result<Void, any Error>>()
        store.save((0..<500).map { sampleRecord(apnsID: "c\($0)") }) { results.fulfill($0) }
        store.close()
        #expect(throws: Never.self) { try results.wait().get() }
        #expect(store.isClosed)

        let late = Latch<Result<Void, any Error>>()
        store.save([sampleRecord()]) { late.fulfill($0) }
        // The completion already ran, on this thread.
        guard case .failure(let error) = late.wait() else { Issue.record("save after close succeeded"); return }
        #expect((error as? StoreError)?.code == .closed)
        #expect(throws: StoreError.self) { try store.count(matching: NotificationFilter()) }
        #expect(throws: StoreError.self) { try store.saveDevice(DeviceRecord(token: "t", environment: .development)) }
        store.close()  // twice is fine

        let reopened = try SQLiteStore(path: path)
        #expect(try reopened.count(matching: NotificationFilter()) == 500)
    }
}

extension SQLiteStoreLifecycleTests {
    /// A store whose last reference is dropped inside a save completion shuts down without deadlocking.
    @Test func releasingStoreInsideCompletionDoesNotDeadlock() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("release.sqlite")
        let done = Latch<Bool>()
        do {
            let store = try SQLiteStore(path: path)
            store.save([sampleRecord(apnsID: "last")]) { [store] _ in
                // The closure holds the last reference once the outer scope ends; close from here too.
                store.close()
                done.fulfill(store.isClosed)
            }
        }
        #expect(done.wait())
        // The writer finishes on its own; the file then opens again with the record in it.
        let reopened = try SQLiteStore(path: path)
        #expect(try reopened.notification(apnsID: "last") != nil)
    }
}

extension SQLiteStoreLifecycleTests {
    /// A store built without opening touches no file and takes no work (code `closed`) until `open()`;
    /// then it reads and writes; a second `open()` does nothing.
    @Test func opensOnlyWhenTold() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("later.sqlite")
        let store = try SQLiteStore(path: path, opensImmediately: false)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: StoreError.self) { try store.device(token: "tok") }
        let refused = #expect(throws: StoreError.self) {
            try store.saveDevice(DeviceRecord(token: "tok", environment: .development))
        }
        #expect(refused?.code == .closed && refused?.message.contains("not open") == true)
        try store.open()
        try store.open()
        #expect(store.openingReport.integrity.outcome == .passed || store.openingReport.integrity.outcome == .skipped)
        try store.saveDevice(DeviceRecord(token: "tok", environment: .development))
        try await store.save([sampleRecord(apnsID: "after-open")])
        #expect(try store.device(token: "tok") != nil)
        #expect(try store.notification(apnsID: "after-open") != nil)
        store.close()
        #expect(throws: StoreError.self) { try store.open() }
    }

    /// A store that was never opened closes at once; one whose open failed (a damaged file) has no writer
    /// left and opens once the file is out of the way.
    @Test func aFailedOpenCanBeRetried() throws {
        let directory = try TemporaryDirectory()
        let never = try SQLiteStore(path: directory.file("never.sqlite"), opensImmediately: false)
        never.close()
        #expect(never.isClosed)

        let path = directory.file("damaged.sqlite")
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        let store = try SQLiteStore(path: path, opensImmediately: false)
        let damaged = #expect(throws: StoreError.self) { try store.open() }
        #expect(damaged?.isCorruption == true)
        _ = try SQLiteStore.moveAside(path: path)
        try store.open()
        try store.saveDevice(DeviceRecord(token: "tok", environment: .development))
        #expect(try store.device(token: "tok") != nil)
        store.close()
    }
}
