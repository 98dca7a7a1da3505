// APNs Sandbox — the database schema as an ordered list of migrations.

/// The schema, version by version.
///
/// `schema_version` holds one row: the number of the last migration applied. On open, every
/// migration above it runs, in order, in one `BEGIN IMMEDIATE` transaction together with the
/// version update, so a crash mid-migration leaves the previous version intact and reopening is
/// idempotent. To change the schema, append a `Migration` with the next version; never edit a shipped one.
enum Schema {
    struct Migration {
        let version: Int
        /// DDL statements (no parameters), run in order.
        let statements: [String]
    }

    static let migrations: [Migration] = [
        Migration(
            version: 1,
            statements: [
                """
                CREATE TABLE notifications(
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    apns_id TEXT NOT NULL UNIQUE,
                    device_token TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    status TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    record BLOB NOT NULL
                )
                """,
                "CREATE INDEX notifications_device_received ON notifications(device_token, received_at)",
                "CREATE INDEX notifications_status ON notifications(status)",
                "CREATE INDEX notifications_received ON notifications(received_at)",
                "CREATE INDEX notifications_topic ON notifications(topic)",
                "CREATE TABLE devices(token TEXT PRIMARY KEY, record BLOB NOT NULL)",
                "CREATE TABLE apps(bundle_id TEXT PRIMARY KEY, record BLOB NOT NULL)",
            ]),
        // Filters that combine a device or the newest-first order with a status (the API's
        // `?device=…&status=…` and `wait` counts) without sorting every record of that status.
        Migration(
            version: 2,
            statements: [
                "CREATE INDEX notifications_device_status ON notifications(device_token, status, received_at)",
                "CREATE INDEX notifications_status_received ON notifications(status, received_at)",
                "DROP INDEX notifications_status",
            ]),
        // The event log (SSE resume, webhook fan-out) and the webhook outbox (issue #6).
        Migration(
            version: 3,
            statements: [
                """
                CREATE TABLE events(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    type TEXT NOT NULL,
                    time INTEGER NOT NULL,
                    device_token TEXT,
                    topic TEXT,
                    data BLOB NOT NULL
                )
                """,
                "CREATE INDEX events_time ON events(time)",
                """
                CREATE TABLE webhook_subscriptions(
                    id TEXT PRIMARY KEY,
                    record BLOB NOT NULL,
                    cursor INTEGER NOT NULL,
                    created_at INTEGER NOT NULL
                )
                """,
                """
                CREATE TABLE webhook_deliveries(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    subscription_id TEXT NOT NULL,
                    event_id INTEGER NOT NULL,
                    message_id TEXT NOT NULL,
                    event_type TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    status TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at INTEGER,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    log BLOB NOT NULL
                )
                """,
                "CREATE INDEX webhook_deliveries_due ON webhook_deliveries(subscription_id, status, next_attempt_at)",
                "CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries(subscription_id, id)",
            ]),
        // One apns-id may name pushes to several devices (a message sent to all of a user's devices): a
        // notification is an apns-id *on a device*. The table is rebuilt with that pair as its unique key
        // (it also serves lookups by apns-id alone, as its prefix); rows, sequence numbers and the other
        // indexes carry over.
        Migration(
            version: 4,
            statements: [
                """
                CREATE TABLE notifications_v4(
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    apns_id TEXT NOT NULL,
                    device_token TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    status TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    record BLOB NOT NULL,
                    UNIQUE(apns_id, device_token)
                )
                """,
                """
                INSERT INTO notifications_v4(seq, apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record)
                SELECT seq, apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record FROM notifications
                """,
                "DROP TABLE notifications",
                "ALTER TABLE notifications_v4 RENAME TO notifications",
                "CREATE INDEX notifications_device_received ON notifications(device_token, received_at)",
                "CREATE INDEX notifications_received ON notifications(received_at)",
                "CREATE INDEX notifications_topic ON notifications(topic)",
                "CREATE INDEX notifications_device_status ON notifications(device_token, status, received_at)",
                "CREATE INDEX notifications_status_received ON notifications(status, received_at)",
            ]),
        // What the inbox filters on besides the keys: the push type, the extension's outcome, and the text
        // a search looks in (displayed title, subtitle and body, and the payload), lower-cased. No index
        // (they are read by a scan within the other filters; the commit stays as cheap as it was). Rows
        // written before this version have them empty.
        Migration(
            version: 5,
            statements: [
                "ALTER TABLE notifications ADD COLUMN push_type TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE notifications ADD COLUMN outcome TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE notifications ADD COLUMN search_text TEXT NOT NULL DEFAULT ''",
            ]),
        // The webhook retry backlog (`apns_sandbox_webhook_retry_backlog`, read at every scrape): a partial index of
        // the deliveries pending after a failed attempt, so that the count reads only those entries instead of
        // scanning the outbox and its payloads. `IF NOT EXISTS`: harmless on a file that already has it.
        Migration(
            version: 6,
            statements: [
                """
                CREATE INDEX IF NOT EXISTS webhook_deliveries_retrying ON webhook_deliveries(id)
                WHERE status = 'pending' AND attempts > 0
                """,
            ]),
        // Device rows are written in `DeviceRecordCodec`'s binary format from this version on (the JSON rows of
        // before are still read): nothing to change in the file, but a build from before refuses it as newer
        // (`unsupportedSchema`) instead of failing on the first binary row it reads.
        Migration(version: 7, statements: []),
    ]

    static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Brings the database up to ``latestVersion``.
    /// - Returns: The versions that were applied (empty when the schema was already current).
    /// - Throws: ``StoreError`` (`unsupportedSchema`) when the file is newer than this build.
    @discardableResult
    static func migrate(_ connection: SQLiteConnection) throws -> [Int] {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try connection.execute("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)")
            let current = try connection.withStatement("SELECT max(version) FROM schema_version") { statement in
                try statement.step() && !statement.isNull(at: 0) ? statement.int(at: 0) : 0
            }
            guard current <= latestVersion else {
                throw StoreError.unsupportedSchema(found: current, known: latestVersion)
            }
            var applied: [Int] = []
            for migration in migrations where migration.version > current {
                for statement in migration.statements {
                    try connection.execute(statement)
                }
                applied.append(migration.version)
            }
            if let last = applied.last {
                try connection.execute("DELETE FROM schema_version")
                try connection.withStatement("INSERT INTO schema_version(version) VALUES (?)") { statement in
                    try statement.bind(last, at: 1)
                    try statement.step()
                }
            }
            try connection.execute("COMMIT")
            return applied
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
