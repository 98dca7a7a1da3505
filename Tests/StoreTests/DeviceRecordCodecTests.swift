// APNs Sandbox — the binary DeviceRecord format: exact round trips, rows of the JSON format before it, bad bytes.
import Foundation
import Sandbox
@testable import Store
import Testing

@Suite struct DeviceRecordCodecTests {
    private let full = DeviceRecord(
        token: String(repeating: "ab", count: 32), environment: .production, locale: "pt_BR", isOnline: false,
        apps: [
            InstalledAppRecord(bundleID: "com.example.app", installedAt: 1_700_000_000_123, uninstalledAt: -5, badge: 7),
            InstalledAppRecord(bundleID: "com.example.ünïcode", installedAt: 0),
        ],
        keys: ["com.example.app": "a2V5", "a": "", "z": "emVk"], createdAt: Int64.min, isAutoRegistered: true,
        configuredAs: "sha256:0123")

    /// Every field survives, nil apart from empty; equal records give equal bytes whatever the keys' order.
    @Test func roundTripsEveryField() throws {
        #expect(try DeviceRecordCodec.decode(DeviceRecordCodec.encode(full)) == full)
        let bare = DeviceRecord(token: "", environment: .development, locale: "", apps: [], createdAt: Int64.max)
        #expect(try DeviceRecordCodec.decode(DeviceRecordCodec.encode(bare)) == bare)
        var reordered = full
        reordered.keys = [:]
        for name in ["z", "com.example.app", "a"] { reordered.keys[name] = full.keys[name] }
        #expect(DeviceRecordCodec.encode(reordered) == DeviceRecordCodec.encode(full))
        #expect(DeviceRecordCodec.encode(full).first == DeviceRecordCodec.currentVersion)
    }

    /// A row of the JSON format (every store before this one) reads as the same record.
    @Test func readsTheJSONFormat() throws {
        let json = try SQLiteStore.encodeJSON(full)
        #expect(json.first == UInt8(ascii: "{"))
        #expect(try DeviceRecordCodec.decode(json) == full)
        let error = try #require(throws: StoreError.self) { try DeviceRecordCodec.decode(Array(#"{"token":1}"#.utf8)) }
        #expect(error.code == .corruptRecord)
    }

    /// Every truncation, trailing bytes, an unknown version, an unknown environment and a bad boolean are
    /// corruptRecord errors, never a crash.
    @Test func rejectsBadBytes() throws {
        let bytes = DeviceRecordCodec.encode(full)
        var samples = (0..<bytes.count).map { Array(bytes[..<$0]) }
        samples.append(bytes + [0])
        var version = bytes
        version[0] = 9
        samples.append(version)
        var environment = bytes
        let range = try #require(environment.firstRange(of: Array("production".utf8)))
        environment.replaceSubrange(range, with: Array("producXion".utf8))
        samples.append(environment)
        var online = bytes
        let onlineAt = try #require(online.firstRange(of: Array("pt_BR".utf8))).upperBound
        online[onlineAt] = 2
        samples.append(online)
        for sample in samples {
            let error = try #require(throws: StoreError.self) { try DeviceRecordCodec.decode(sample) }
            #expect(error.code == .corruptRecord)
        }
    }

    /// A store whose rows are JSON (written before this format) lists and reads them, and its next change of a
    /// device writes that one in the binary format; the others stay as they were and keep reading.
    @Test func storeReadsJSONRowsAndRewritesOnChange() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("devices.sqlite")
        let store = try SQLiteStore(path: path)
        var second = full
        second.token = "second"
        try store.saveDevice(full)
        try store.saveDevice(second)
        store.close()
        let connection = try SQLiteConnection(path: path, readOnly: false)
        for record in [full, second] {
            try SQLiteStore.upsertDevice(token: record.token, record: try SQLiteStore.encodeJSON(record), on: connection)
        }
        connection.close()

        let reopened = try SQLiteStore(path: path)
        defer { reopened.close() }
        var listed: [DeviceRecord] = []
        try reopened.forEachDevice { listed.append($0) }
        #expect(listed == [full, second])
        #expect(try reopened.device(token: "second") == second)
        var changed = second
        changed.isOnline = true
        try reopened.saveDevice(changed)
        let raw = try SQLiteConnection(path: path, readOnly: true)
        defer { raw.close() }
        let firstBytes = try raw.withStatement("SELECT record FROM devices ORDER BY rowid") { statement in
            var rows: [[UInt8]] = []
            while try statement.step() { rows.append(statement.bytes(at: 0)) }
            return rows
        }
        #expect(firstBytes.map(\.first) == [UInt8(ascii: "{"), DeviceRecordCodec.currentVersion])
        listed = []
        try reopened.forEachDevice { listed.append($0) }
        #expect(listed == [full, changed])
    }

    /// The batches of a start's background load: in rowid order from a cursor, `next` nil after the last, and a
    /// damaged row left out and counted (the load goes on past it) instead of failing the batch.
    @Test func batchesGoInOrderAndLeaveOutADamagedRow() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("devices.sqlite")
        let store = try SQLiteStore(path: path)
        let records = (0..<5).map { index in
            var record = full
            record.token = String(format: "%064x", index)
            return record
        }
        for record in records { try store.saveDevice(record) }
        store.close()
        let connection = try SQLiteConnection(path: path, readOnly: false)
        try SQLiteStore.upsertDevice(token: records[2].token, record: [DeviceRecordCodec.currentVersion, 0xFF], on: connection)
        connection.close()

        let reopened = try SQLiteStore(path: path)
        defer { reopened.close() }
        let first = try reopened.devices(after: 0, limit: 2)
        #expect(first.records == Array(records[0..<2]) && first.unreadable == 0)
        let second = try reopened.devices(after: try #require(first.next), limit: 2)
        #expect(second.records == [records[3]] && second.unreadable == 1, "the damaged row is counted, not returned")
        let third = try reopened.devices(after: try #require(second.next), limit: 2)
        #expect(third.records == [records[4]] && third.next == nil && third.unreadable == 0)
    }
}
