// APNs Sandbox — resetting the store to a seed, or replacing what it holds with a snapshot, in one transaction.
import Sandbox
import Support

/// What ``SQLiteStore/reset(_:committed:)`` changes. Every part runs in one transaction on the writer
/// thread, in this order: notifications and events go, each stored device and app is kept, replaced or
/// deleted, the missing ones to add are added, the notifications to insert are inserted, and the
/// announcement is logged last.
public struct StoreReset: Sendable {
    /// Which notifications go, or which events.
    public enum Selection: Sendable, Equatable {
        case nothing
        case everything
        /// Notifications: those on these devices or of these apps. Events: those about these devices (any
        /// type), the notification events of these apps (`data.bundleId`), and `push.rejected` events whose
        /// topic is in ``StoreReset/rejectedTopics``; never an earlier `sandbox.reset` event.
        case matching(deviceTokens: Set<String>, bundleIDs: Set<String>)
    }

    /// What becomes of one stored row.
    public enum Change<Record: Sendable>: Sendable {
        case keep
        /// Replaces it (the key — token or bundle ID — stays the row's).
        case save(Record)
        case delete
    }

    public var notifications: Selection = .nothing
    public var events: Selection = .nothing
    /// The topics of the selected apps' `push.rejected` events (a bundle ID and its push types' topics).
    public var rejectedTopics: Set<String> = []
    /// Decides each stored device (nil: all are kept).
    public var device: (@Sendable (DeviceRecord) -> Change<DeviceRecord>)?
    /// The only devices ``device`` is asked about (nil: every stored device).
    public var devicesToDecide: Set<String>?
    /// Created after ``device`` ran, each unless a device with its token is there then.
    public var devicesToAdd: [DeviceRecord] = []
    /// Decides each stored app (nil: all are kept).
    public var app: (@Sendable (AppRecord) -> Change<AppRecord>)?
    /// Created after ``app`` ran, each unless an app with its bundle ID is there then.
    public var appsToAdd: [AppRecord] = []
    /// Inserted after the deletes, in this order (a later one is newer in listings with equal `receivedAt`).
    /// Each (apns-id, device) must be new: a snapshot restores into an emptied table.
    public var notificationsToInsert: [NotificationRecord] = []
    /// The event logged last, in the same transaction, given what was removed; nil: none.
    public var announcement: (@Sendable (StoreResetOutcome.Counts) -> EventDraft)?

    public init() {}
}

/// What ``SQLiteStore/reset(_:committed:)`` did.
public struct StoreResetOutcome: Sendable {
    public struct Counts: Sendable, Equatable {
        public var notificationsRemoved = 0
        public var eventsRemoved = 0
        public var devicesRemoved = 0
        public var devicesWritten = 0
        public var appsRemoved = 0
        public var appsWritten = 0
        public var notificationsInserted = 0
    }

    public var counts = Counts()
    /// The removed notifications (their attachment files are the caller's to remove).
    public var removedNotifications: [NotificationKey] = []
    /// Every device row that changed: before and after (nil: absent).
    public var devices: [DeviceModification] = []
    /// Every app row that changed: before and after (nil: absent).
    public var apps: [(before: AppRecord?, after: AppRecord?)] = []
    /// The announcement as logged.
    public var event: SandboxEvent?
}

extension SQLiteStore {
    /// Carries out `reset` in one transaction on the writer thread and waits for its commit: a reader sees
    /// all of it or none of it, and every save queued before this call is committed before it (so it is
    /// removed too when selected). Right after the commit, still on the writer thread and before any later
    /// write completes, the device and app caches follow, then `committed` runs (keep in-memory copies in
    /// step there, quickly and without waiting for the store), then the announcement goes to the event
    /// observer (SSE, webhooks) like every committed event.
    /// - Throws: The store's error; nothing changed then.
    @discardableResult
    public func reset(
        _ reset: StoreReset, committed: @escaping @Sendable (StoreResetOutcome) -> Void = { _ in }
    ) throws -> StoreResetOutcome {
        let (deviceCache, appCache, queue) = (deviceCache, appCache, queue)
        return try write({ connection in
            try Self.apply(reset, on: connection, now: WallClock.milliseconds())
        }, committed: { outcome in
            for change in outcome.devices {
                if let token = change.before?.token ?? change.after?.token { deviceCache.set(change.after, for: token) }
            }
            for change in outcome.apps {
                if let bundleID = change.before?.bundleID ?? change.after?.bundleID { appCache.set(change.after, for: bundleID) }
            }
            committed(outcome)
            if let event = outcome.event {
                queue.eventObserver([event])
            }
        })
    }

    private static func apply(_ reset: StoreReset, on connection: SQLiteConnection, now: Int64) throws -> StoreResetOutcome {
        var outcome = StoreResetOutcome()
        outcome.removedNotifications = try deleteNotifications(reset.notifications, on: connection)
        outcome.counts.notificationsRemoved = outcome.removedNotifications.count
        outcome.counts.eventsRemoved = try deleteEvents(reset.events, rejectedTopics: reset.rejectedTopics, on: connection)
        outcome.devices = try resetDevices(reset, on: connection)
        outcome.counts.devicesRemoved = outcome.devices.count { $0.after == nil }
        outcome.counts.devicesWritten = outcome.devices.count { $0.after != nil }
        outcome.apps = try resetApps(reset, on: connection)
        outcome.counts.appsRemoved = outcome.apps.count { $0.after == nil }
        outcome.counts.appsWritten = outcome.apps.count { $0.after != nil }
        if !reset.notificationsToInsert.isEmpty {
            try connection.withStatement(StoreWriter.insertOrUpdateSQL) { statement in
                for record in reset.notificationsToInsert {
                    try StoreWriter.write(EncodedRow(record), updatedAt: now, with: statement, on: connection)
                }
            }
            outcome.counts.notificationsInserted = reset.notificationsToInsert.count
        }
        if let announcement = reset.announcement {
            let draft = announcement(outcome.counts)
            outcome.event = try connection.withStatement(StoreWriter.insertEventSQL) { statement in
                try StoreWriter.insert(draft, with: statement, on: connection)
            }
        }
        return outcome
    }

    private static func deleteNotifications(_ selection: StoreReset.Selection, on connection: SQLiteConnection) throws -> [NotificationKey] {
        let condition: SQLCondition
        switch selection {
        case .nothing:
            return []
        case .everything:
            condition = SQLCondition(sql: "", values: [])
        case .matching(let tokens, let bundleIDs):
            condition = SQLCondition(anyOf: [("device_token", tokens), ("bundle_id", bundleIDs)])
            guard !condition.sql.isEmpty else { return [] }
        }
        return try connection.withStatement("DELETE FROM notifications\(condition.sql) RETURNING apns_id, device_token") { statement in
            try condition.bind(to: statement)
            var keys: [NotificationKey] = []
            while try statement.step() {
                keys.append(NotificationKey(apnsID: statement.string(at: 0) ?? "", deviceToken: statement.string(at: 1) ?? ""))
            }
            return keys
        }
    }

    private static func deleteEvents(
        _ selection: StoreReset.Selection, rejectedTopics: Set<String>, on connection: SQLiteConnection
    ) throws -> Int {
        var condition: SQLCondition
        switch selection {
        case .nothing:
            return 0
        case .everything:
            condition = SQLCondition(sql: "", values: [])
        case .matching(let tokens, let bundleIDs):
            // Event data is JSON text kept as a BLOB; json_extract reads it as text.
            condition = SQLCondition(anyOf: [
                ("device_token", tokens),
                ("json_extract(CAST(data AS TEXT), '$.bundleId')", bundleIDs),
                ("CASE WHEN type = 'push.rejected' THEN topic END", rejectedTopics),
            ])
            guard !condition.sql.isEmpty else { return 0 }
            condition.sql += " AND type != '\(SandboxEventType.sandboxReset.rawValue)'"
        }
        return try connection.withStatement("DELETE FROM events\(condition.sql)") { statement in
            try condition.bind(to: statement)
            _ = try statement.step()
            return connection.changes
        }
    }

    private static func resetDevices(_ reset: StoreReset, on connection: SQLiteConnection) throws -> [DeviceModification] {
        let stored = reset.device == nil ? [] : try reset.devicesToDecide.map { tokens in
            try tokens.sorted().compactMap { try readDevice(token: $0, on: connection) }
        } ?? connection.withStatement("SELECT record FROM devices ORDER BY rowid") { statement in
            var records: [DeviceRecord] = []
            while try statement.step() { records.append(try DeviceRecordCodec.decode(statement.bytes(at: 0))) }
            return records
        }
        return try ResetDecisions.apply(
            stored: stored, decide: reset.device, toAdd: reset.devicesToAdd, key: \.token, rekeyed: ResetDecisions.rekeyed,
            isStored: { try readDevice(token: $0, on: connection) != nil },
            save: { try upsertDevice(token: $0.token, record: DeviceRecordCodec.encode($0), on: connection) },
            delete: { try deleteDevice(token: $0, on: connection) }
        ).map { DeviceModification(before: $0.before, after: $0.after) }
    }

    private static func resetApps(_ reset: StoreReset, on connection: SQLiteConnection) throws -> [(before: AppRecord?, after: AppRecord?)] {
        let stored = try connection.withStatement("SELECT record FROM apps WHERE bundle_id != ? ORDER BY bundle_id") { statement in
            try statement.bind(StoreWriter.probeKey, at: 1)
            var records: [AppRecord] = []
            while try statement.step() { records.append(try decodeJSON(AppRecord.self, statement.bytes(at: 0))) }
            return records
        }
        return try ResetDecisions.apply(
            stored: stored, decide: reset.app, toAdd: reset.appsToAdd, key: \.bundleID, rekeyed: ResetDecisions.rekeyed,
            isStored: { bundleID in stored.contains { $0.bundleID == bundleID } },
            save: { try upsertApp(bundleID: $0.bundleID, json: try encodeJSON($0), on: connection) },
            delete: { try deleteApp(bundleID: $0, on: connection) })
    }
}

extension SQLCondition {
    init(sql: String, values: [Value]) {
        self.sql = sql
        self.values = values
    }

    /// ` WHERE a IN (…) OR b IN (…)` over the non-empty sets (empty when every set is empty), values sorted.
    init(anyOf terms: [(expression: String, values: Set<String>)]) {
        var clauses: [String] = []
        var values: [Value] = []
        for (expression, set) in terms where !set.isEmpty {
            clauses.append("\(expression) IN (" + Array(repeating: "?", count: set.count).joined(separator: ", ") + ")")
            values += set.sorted().map(Value.text)
        }
        self.init(sql: clauses.isEmpty ? "" : " WHERE (" + clauses.joined(separator: " OR ") + ")", values: values)
    }
}
