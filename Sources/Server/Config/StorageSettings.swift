// APNs Sandbox — configuration of durable storage and of delivery to simulated devices.
import Store

/// Where and how records are kept.
public struct StorageSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// `durable` (SQLite files; every push committed before its 200) or `memory` (the load-test mode: a
    /// bounded journal in memory, nothing on disk, everything lost on restart; ``memory`` sizes it).
    public var mode = Mode.durable
    /// The journal of `mode` `memory`.
    public var memory = MemoryJournal()
    /// The SQLite file, relative to the data directory.
    public var file = "sandbox.sqlite"
    /// `full` (a committed push survives power loss) or `normal` (survives a crash of the process).
    public var synchronous = Synchronous.full
    /// Keep at most this many notification records (the oldest final ones are pruned).
    public var maxRecords = 1_000_000
    /// Prune final records older than this.
    public var maxAgeDays: ConfigDuration<InDays> = 30
    /// The check of both database files at start: `quick` (`PRAGMA quick_check`), `full`
    /// (`PRAGMA integrity_check`) or `off`.
    public var integrityCheck = IntegrityCheck.Mode.quick
    /// Longest the start-time check may take per file; when it runs out the server starts with a
    /// warning that the check was incomplete. 0 = no limit.
    public var integrityCheckSeconds: ConfigDuration<InSeconds> = 10
    /// A damaged file at start: `refuse` (exit with an error naming it) or `moveAside` (rename it and
    /// its -wal/-shm to `<name>.corrupt-<UTC time>` and start with an empty store).
    public var onCorruption = OnCorruption.refuse
    /// The most the main database file may grow to, in MiB (`PRAGMA max_page_count`); pushes that
    /// need more are answered 500 and /readyz turns not-ready. 0 = no limit (the disk's).
    public var maxSizeMB = 0.0

    public init() {}

    /// `synchronous`: SQLite's `PRAGMA synchronous` for the main store.
    public enum Synchronous: String, Sendable, ConfigurationEnum {
        case full, normal

        var sqlite: SQLiteStore.Synchronous {
            switch self {
            case .full: .full
            case .normal: .normal
            }
        }
    }

    /// `mode`: where records and events are kept.
    public enum Mode: String, Sendable, ConfigurationEnum {
        case durable, memory
    }

    /// `storage.memory`: how much the memory journal keeps; beyond it the oldest go (and are counted).
    public struct MemoryJournal: Codable, Sendable, Equatable, StrictlyKeyed {
        /// Notification records kept (the newest).
        public var notifications = 10_000
        /// Events kept (the newest): what SSE catch-up and webhooks can still be fed.
        public var events = 50_000

        public init() {}

        enum Keys: String, CodingKey, CaseIterable {
            case notifications, events
        }

        public init(from decoder: any Decoder) throws {
            let section = try ConfigSection(decoder, defaults: Self())
            notifications = try section(.notifications, \.notifications)
            events = try section(.events, \.events)
        }
    }

    /// `onCorruption`: what a damaged database file at start leads to.
    public enum OnCorruption: String, Sendable, ConfigurationEnum {
        case refuse, moveAside
    }

    enum Keys: String, CodingKey, CaseIterable {
        case file, synchronous, maxRecords, maxAgeDays, integrityCheck, integrityCheckSeconds, onCorruption
        case maxSizeMB, mode, memory
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        file = try section(.file, \.file)
        synchronous = try section(.synchronous, \.synchronous)
        maxRecords = try section(.maxRecords, \.maxRecords)
        maxAgeDays = try section(.maxAgeDays, \.maxAgeDays)
        integrityCheck = try section(.integrityCheck, \.integrityCheck)
        integrityCheckSeconds = try section(.integrityCheckSeconds, \.integrityCheckSeconds)
        onCorruption = try section(.onCorruption, \.onCorruption)
        maxSizeMB = try section(.maxSizeMB, \.maxSizeMB)
        mode = try section(.mode, \.mode)
        memory = try section(.memory, \.memory)
    }

    /// What is wrong with these settings, each naming its key; empty when they are valid.
    func problems() -> [String] {
        var problems: [String] = []
        if maxRecords <= 0 || !(maxAgeDays > 0) || file.isEmpty {
            problems.append("storage.maxRecords and storage.maxAgeDays must be positive, storage.file non-empty")
        }
        if !(integrityCheckSeconds >= 0) || !integrityCheckSeconds.amount.isFinite {
            problems.append("storage.integrityCheckSeconds must be 0 (no limit) or a positive number of seconds")
        }
        if !(1...10_000_000).contains(memory.notifications) || !(1...10_000_000).contains(memory.events) {
            problems.append("storage.memory.notifications and storage.memory.events must be between 1 and 10000000")
        }
        if !(maxSizeMB >= 0) || !maxSizeMB.isFinite {
            problems.append("storage.maxSizeMB must be 0 (no limit) or a positive number of MiB")
        }
        return problems
    }

    /// The start-time check of each database file.
    var integrity: IntegrityCheck {
        IntegrityCheck(mode: integrityCheck, timeLimitSeconds: integrityCheckSeconds > 0 ? integrityCheckSeconds.amount : nil)
    }

    /// ``maxSizeMB`` in bytes (0 = no limit).
    var maxSizeBytes: Int64 {
        maxSizeMB > 0 ? Int64((maxSizeMB * 1_048_576).rounded(.down)) : 0
    }
}

/// How simulated devices receive pushes.
public struct DeliverySettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// Priority 5 and 1 pushes are delivered after this delay (batched); 0 = at once.
    public var lowPriorityDelayMilliseconds: ConfigDuration<InMilliseconds> = 0
    /// Background (silent) pushes beyond this many per app per hour are held (Apple: 2–3); 0 = no throttle.
    public var backgroundPushesPerHour = 3

    public init() {}

    enum Keys: String, CodingKey, CaseIterable {
        case lowPriorityDelayMilliseconds, backgroundPushesPerHour
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        lowPriorityDelayMilliseconds = try section(.lowPriorityDelayMilliseconds, \.lowPriorityDelayMilliseconds)
        backgroundPushesPerHour = try section(.backgroundPushesPerHour, \.backgroundPushesPerHour)
    }
}

/// How service extensions run (the per-app configuration is the app's `serviceExtension`).
public struct ExtensionSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// The time an extension gets before `serviceExtensionTimeWillExpire` (iOS: about 30 s), unless the app sets its own.
    public var defaultBudgetMilliseconds: ConfigDuration<InMilliseconds> = 30_000
    /// How long content is still accepted after `serviceExtensionTimeWillExpire`.
    public var defaultGraceMilliseconds: ConfigDuration<InMilliseconds> = 1_000
    /// Honour the per-push header `apns-sandbox-extension-budget-ms` (for tests; off by default).
    public var allowBudgetHeader = false
    /// Instances running at once; more wait in order (their budget starts when they run).
    public var maxConcurrentInstances = 10_000
    /// Programs the REST API may name as an app's `exec` extension: files, or directories ending in `/`
    /// (everything under them); relative entries are taken from the configuration file's directory. Exec
    /// extensions in this file's `apps` are allowed without being listed; nothing else runs
    /// (docs/security.md). Empty by default: the API cannot start programs.
    public var allowedExecutables: [String] = []

    enum Keys: String, CodingKey, CaseIterable {
        case defaultBudgetMilliseconds, defaultGraceMilliseconds, allowBudgetHeader, maxConcurrentInstances
        case allowedExecutables
    }

    public init() {}

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        defaultBudgetMilliseconds = try section(.defaultBudgetMilliseconds, \.defaultBudgetMilliseconds)
        defaultGraceMilliseconds = try section(.defaultGraceMilliseconds, \.defaultGraceMilliseconds)
        allowBudgetHeader = try section(.allowBudgetHeader, \.allowBudgetHeader)
        maxConcurrentInstances = try section(.maxConcurrentInstances, \.maxConcurrentInstances)
        allowedExecutables = try section(.allowedExecutables, \.allowedExecutables)
    }
}
