// APNs Sandbox — SQLiteStore as the DeviceRepository (devices in DeviceRecordCodec's format, apps as JSON rows).
import Foundation
import Sandbox

/// Apps change rarely, so they use Foundation's JSON coders (sorted keys, so equal records store equal bytes);
/// devices are written with every new token and all read at start, so they use ``DeviceRecordCodec``. Writes
/// are synchronous (but ``registerDevice(_:completion:)``): each one is its own transaction on the writer
/// thread and is durable when the call returns.
extension SQLiteStore {
    public func saveDevice(_ device: DeviceRecord) throws {
        let bytes = DeviceRecordCodec.encode(device)
        let cache = deviceCache
        // The cache follows commits in commit order (on the writer thread), as ``modifyDevice`` keeps it.
        try write({ connection in try Self.upsertDevice(token: device.token, record: bytes, on: connection) },
                  committed: { _ in cache.set(device, for: device.token) })
    }

    /// Queued as a task of the next group commit (no commit or fsync of its own, so new tokens register at
    /// push rate), ahead of every save queued later. The cache holds the device at once, so reads after
    /// this call see it; a write that fails forgets it again.
    public func registerDevice(_ device: DeviceRecord, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        let bytes = DeviceRecordCodec.encode(device)
        let token = device.token
        deviceCache.setIfAbsent(device, for: token)
        let cache = deviceCache
        let body: @Sendable (SQLiteConnection) throws -> any Sendable = { connection in
            try connection.withStatement(
                "INSERT INTO devices(token, record) VALUES (?, ?) ON CONFLICT(token) DO NOTHING"
            ) { statement in
                try statement.bind(token, at: 1)
                try statement.bind(bytes, at: 2)
                try statement.step()
                return connection.changes > 0
            }
        }
        let failure = queue.enqueue(.batchedTask(body: body, completion: { result in
            switch result {
            case .success(let inserted):
                let added = inserted as? Bool ?? false
                // Committed: cached again (the cache may have been cleared since), unless a device was there.
                if added { cache.set(device, for: token) } else { cache.forget(token) }
                completion(.success(added))
            case .failure(let error):
                cache.forget(token)
                completion(.failure(error))
            }
        }))
        if let failure {
            cache.forget(token)
            completion(.failure(failure))
        }
    }

    /// One writer task: the read, the change and the write share its transaction, and the cache is
    /// updated in commit order (on the writer thread) before `committed` runs.
    public func modifyDevice(
        token: String, _ change: @escaping @Sendable (DeviceRecord?) throws -> DeviceChange,
        committed: @escaping @Sendable (_ before: DeviceRecord?, _ after: DeviceRecord?) -> Void
    ) throws -> DeviceModification {
        let cache = deviceCache
        return try write({ connection in
            let before = try Self.readDevice(token: token, on: connection)
            switch try change(before) {
            case .keep:
                return DeviceModification(before: before, after: before)
            case .save(let record):
                precondition(record.token == token, "modifyDevice saves the device it read")
                try Self.upsertDevice(token: token, record: DeviceRecordCodec.encode(record), on: connection)
                return DeviceModification(before: before, after: record)
            case .delete:
                try Self.deleteDevice(token: token, on: connection)
                return DeviceModification(before: before, after: nil)
            }
        }, committed: { modification in
            cache.set(modification.after, for: token)
            committed(modification.before, modification.after)
        })
    }

    public func device(token: String) throws -> DeviceRecord? {
        if let cached = deviceCache.lookup(token) { return cached }
        let ticket = deviceCache.readTicket()
        let found = try readDevice(token: token)
        deviceCache.fill(found, for: token, readSince: ticket)
        return found
    }

    private func readDevice(token: String) throws -> DeviceRecord? {
        try read { connection in try Self.readDevice(token: token, on: connection) }
    }

    /// Creates or replaces the device row (on the writer's connection).
    static func upsertDevice(token: String, record: [UInt8], on connection: SQLiteConnection) throws {
        try connection.withStatement(
            "INSERT INTO devices(token, record) VALUES (?, ?) ON CONFLICT(token) DO UPDATE SET record = excluded.record"
        ) { statement in
            try statement.bind(token, at: 1)
            try statement.bind(record, at: 2)
            try statement.step()
        }
    }

    /// - Returns: false when there was no such row.
    @discardableResult
    static func deleteDevice(token: String, on connection: SQLiteConnection) throws -> Bool {
        try connection.withStatement("DELETE FROM devices WHERE token = ?") { statement in
            try statement.bind(token, at: 1)
            try statement.step()
            return connection.changes > 0
        }
    }

    static func readDevice(token: String, on connection: SQLiteConnection) throws -> DeviceRecord? {
        try connection.withStatement("SELECT record FROM devices WHERE token = ?") { statement in
            try statement.bind(token, at: 1)
            guard try statement.step() else { return nil }
            return try DeviceRecordCodec.decode(statement.bytes(at: 0))
        }
    }

    /// Devices in the order they were first saved. A `limit` of 0 or less returns nothing.
    public func devices(limit: Int, offset: Int) throws -> [DeviceRecord] {
        guard limit > 0 else { return [] }
        return try read { connection in
            try connection.withStatement("SELECT record FROM devices ORDER BY rowid LIMIT ? OFFSET ?") { statement in
                try statement.bind(limit, at: 1)
                try statement.bind(max(offset, 0), at: 2)
                var devices: [DeviceRecord] = []
                while try statement.step() {
                    devices.append(try DeviceRecordCodec.decode(statement.bytes(at: 0)))
                }
                return devices
            }
        }
    }

    /// One statement over the table, on the reader connection (other reads wait for it).
    public func forEachDevice(_ body: (DeviceRecord) throws -> Void) throws {
        try read { connection in
            try connection.withStatement("SELECT record FROM devices ORDER BY rowid") { statement in
                while try statement.step() { try body(try DeviceRecordCodec.decode(statement.bytes(at: 0))) }
            }
        }
    }

    /// By rowid (the listing order), one statement on the reader connection per batch; the rows are decoded after
    /// it (a push's device read waits for that connection meanwhile). A row that does not decode is left out and
    /// counted (the load goes on past it; a push to its token reads the row again, and fails).
    public func devices(after cursor: Int64, limit: Int) throws -> (records: [DeviceRecord], next: Int64?, unreadable: Int) {
        let limit = max(limit, 1)
        let (rows, last) = try read { connection in
            try connection.withStatement("SELECT rowid, record FROM devices WHERE rowid > ? ORDER BY rowid LIMIT ?") { statement in
                try statement.bind(cursor, at: 1)
                try statement.bind(limit, at: 2)
                var rows: [[UInt8]] = []
                rows.reserveCapacity(limit)
                var last = cursor
                while try statement.step() {
                    last = statement.int64(at: 0)
                    rows.append(statement.bytes(at: 1))
                }
                return (rows, last)
            }
        }
        var records: [DeviceRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows { if let record = try? DeviceRecordCodec.decode(row) { records.append(record) } }
        return (records, rows.count < limit ? nil : last, rows.count - records.count)
    }

    public func deviceCountBound() throws -> Int {
        try read { connection in
            try connection.withStatement("SELECT max(rowid) FROM devices") { statement in
                try statement.step() ? statement.int(at: 0) : 0
            }
        }
    }

    /// Deletes the device; returns false when there was none. Its notifications stay.
    @discardableResult
    public func deleteDevice(token: String) throws -> Bool {
        let cache = deviceCache
        do {
            return try write({ connection in try Self.deleteDevice(token: token, on: connection) },
                             committed: { _ in cache.set(nil, for: token) })
        } catch {
            cache.forget(token)  // not known either way: the next read asks the file
            throw error
        }
    }

    public func saveApp(_ app: AppRecord) throws {
        let json = try Self.encodeJSON(app)
        try write { connection in try Self.upsertApp(bundleID: app.bundleID, json: json, on: connection) }
        appCache.set(app, for: app.bundleID)
    }

    /// Creates or replaces the app row (on the writer's connection).
    static func upsertApp(bundleID: String, json: [UInt8], on connection: SQLiteConnection) throws {
        try connection.withStatement(
            "INSERT INTO apps(bundle_id, record) VALUES (?, ?) ON CONFLICT(bundle_id) DO UPDATE SET record = excluded.record"
        ) { statement in
            try statement.bind(bundleID, at: 1)
            try statement.bind(json, at: 2)
            try statement.step()
        }
    }

    /// - Returns: false when there was no such row.
    @discardableResult
    static func deleteApp(bundleID: String, on connection: SQLiteConnection) throws -> Bool {
        try connection.withStatement("DELETE FROM apps WHERE bundle_id = ?") { statement in
            try statement.bind(bundleID, at: 1)
            try statement.step()
            return connection.changes > 0
        }
    }

    public func app(bundleID: String) throws -> AppRecord? {
        if let cached = appCache.lookup(bundleID) { return cached }
        let ticket = appCache.readTicket()
        let found = try readApp(bundleID: bundleID)
        appCache.fill(found, for: bundleID, readSince: ticket)
        return found
    }

    private func readApp(bundleID: String) throws -> AppRecord? {
        try read { connection in
            try connection.withStatement("SELECT record FROM apps WHERE bundle_id = ?") { statement in
                try statement.bind(bundleID, at: 1)
                guard try statement.step() else { return nil }
                return try Self.decodeJSON(AppRecord.self, statement.bytes(at: 0))
            }
        }
    }

    /// All apps, by bundle ID.
    public func apps() throws -> [AppRecord] {
        try read { connection in
            try connection.withStatement("SELECT record FROM apps ORDER BY bundle_id") { statement in
                var apps: [AppRecord] = []
                while try statement.step() {
                    apps.append(try Self.decodeJSON(AppRecord.self, statement.bytes(at: 0)))
                }
                return apps
            }
        }
    }

    /// Deletes the app; returns false when there was none.
    @discardableResult
    public func deleteApp(bundleID: String) throws -> Bool {
        defer { appCache.set(nil, for: bundleID) }
        return try write { connection in try Self.deleteApp(bundleID: bundleID, on: connection) }
    }

    static func encodeJSON(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return [UInt8](try encoder.encode(value))
    }

    static func decodeJSON<Value: Decodable>(_ type: Value.Type, _ bytes: [UInt8]) throws -> Value {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw StoreError.corruptRecord("cannot decode \(Value.self): \(error)")
        }
    }
}
