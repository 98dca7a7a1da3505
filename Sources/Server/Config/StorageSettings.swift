// APNs Sandbox — configuration of durable storage and of delivery to simulated devices.
import Store

/// Where and how records are kept.
public struct StorageSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// The SQLite file, relative to the data directory.
    public var file = "sandbox.sqlite"
    /// `full` (a committed push survives power loss) or `normal` (survives a crash of the process).
    public var synchronous = "full"
    /// Keep at most this many notification records (the oldest final ones are pruned).
    public var maxRecords = 1_000_000
    /// Prune final records older than this.
    public var maxAgeDays = 30.0
    /// The check of both database files at start: `quick` (`PRAGMA quick_check`), `full`
    /// (`PRAGMA integrity_check`) or `off`.
    public var integrityCheck = "quick"
    /// Longest the start-time check may take per file; when it runs out the server starts with a
    /// warning that the check was incomplete. 0 = no limit.
    public var integrityCheckSeconds = 10.0
    /// A damaged file at start: `refuse` (exit with an error naming it) or `moveAside` (rename it and
    /// its -wal/-shm to `<name>.corrupt-<UTC time>` and start with an empty store).
    public var onCorruption = "refuse"
    /// The most the main database file may grow to, in MiB (`PRAGMA max_page_count`); pushes that
    /// need more are answered 500 and /readyz turns not-ready. 0 = no limit (the disk's).
    public var maxSizeMB = 0.0

    public init() {}

    enum Keys: String, CodingKey, CaseIterable {
        case file, synchronous, maxRecords, maxAgeDays, integrityCheck, integrityCheckSeconds, onCorruption
        case maxSizeMB
    }

    public init(from decoder: any Decoder) throws {
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StorageSettings()
        file = try c.decodeIfPresent(String.self, forKey: .file) ?? d.file
        synchronous = try c.decodeIfPresent(String.self, forKey: .synchronous) ?? d.synchronous
        maxRecords = try c.decodeIfPresent(Int.self, forKey: .maxRecords) ?? d.maxRecords
        maxAgeDays = try c.decodeIfPresent(Double.self, forKey: .maxAgeDays) ?? d.maxAgeDays
        integrityCheck = try c.decodeIfPresent(String.self, forKey: .integrityCheck) ?? d.integrityCheck
        integrityCheckSeconds = try c.decodeIfPresent(Double.self, forKey: .integrityCheckSeconds) ?? d.integrityCheckSeconds
        onCorruption = try c.decodeIfPresent(String.self, forKey: .onCorruption) ?? d.onCorruption
        maxSizeMB = try c.decodeIfPresent(Double.self, forKey: .maxSizeMB) ?? d.maxSizeMB
    }

    /// What is wrong with these settings, each naming its key; empty when they are valid.
    func problems() -> [String] {
        var problems: [String] = []
        if !["full", "normal"].contains(synchronous) { problems.append("storage.synchronous must be full or normal") }
        if maxRecords <= 0 || !(maxAgeDays > 0) || file.isEmpty {
            problems.append("storage.maxRecords and storage.maxAgeDays must be positive, storage.file non-empty")
        }
        if IntegrityCheck.Mode(rawValue: integrityCheck) == nil {
            problems.append("storage.integrityCheck must be quick, full or off, not \"\(integrityCheck)\"")
        }
        if !(integrityCheckSeconds >= 0) || !integrityCheckSeconds.isFinite {
            problems.append("storage.integrityCheckSeconds must be 0 (no limit) or a positive number of seconds")
        }
        if !["refuse", "moveAside"].contains(onCorruption) {
            problems.append("storage.onCorruption must be refuse or moveAside, not \"\(onCorruption)\"")
        }
        if !(maxSizeMB >= 0) || !maxSizeMB.isFinite {
            problems.append("storage.maxSizeMB must be 0 (no limit) or a positive number of MiB")
        }
        return problems
    }

    /// The start-time check of each database file.
    var integrity: IntegrityCheck {
        IntegrityCheck(
            mode: IntegrityCheck.Mode(rawValue: integrityCheck) ?? .quick,
            timeLimitSeconds: integrityCheckSeconds > 0 ? integrityCheckSeconds : nil)
    }

    /// ``maxSizeMB`` in bytes (0 = no limit).
    var maxSizeBytes: Int64 {
        maxSizeMB > 0 ? Int64((maxSizeMB * 1_048_576).rounded(.down)) : 0
    }
}

/// How simulated devices receive pushes.
public struct DeliverySettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// Priority 5 and 1 pushes are delivered after this delay (batched); 0 = at once.
    public var lowPriorityDelayMilliseconds: Int64 = 0
    /// Background (silent) pushes beyond this many per app per hour are held (Apple: 2–3); 0 = no throttle.
    public var backgroundPushesPerHour = 3

    public init() {}

    enum Keys: String, CodingKey, CaseIterable {
        case lowPriorityDelayMilliseconds, backgroundPushesPerHour
    }

    public init(from decoder: any Decoder) throws {
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = DeliverySettings()
        lowPriorityDelayMilliseconds =
            try c.decodeIfPresent(Int64.self, forKey: .lowPriorityDelayMilliseconds) ?? d.lowPriorityDelayMilliseconds
        backgroundPushesPerHour = try c.decodeIfPresent(Int.self, forKey: .backgroundPushesPerHour) ?? d.backgroundPushesPerHour
    }
}

/// How service extensions run (the per-app configuration is the app's `serviceExtension`).
public struct ExtensionSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// The time an extension gets before `serviceExtensionTimeWillExpire` (iOS: about 30 s), unless the app sets its own.
    public var defaultBudgetMilliseconds: Int64 = 30_000
    /// How long content is still accepted after `serviceExtensionTimeWillExpire`.
    public var defaultGraceMilliseconds: Int64 = 1_000
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
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ExtensionSettings()
        allowedExecutables = try c.decodeIfPresent([String].self, forKey: .allowedExecutables) ?? d.allowedExecutables
        defaultBudgetMilliseconds = try c.decodeIfPresent(Int64.self, forKey: .defaultBudgetMilliseconds) ?? d.defaultBudgetMilliseconds
        defaultGraceMilliseconds = try c.decodeIfPresent(Int64.self, forKey: .defaultGraceMilliseconds) ?? d.defaultGraceMilliseconds
        allowBudgetHeader = try c.decodeIfPresent(Bool.self, forKey: .allowBudgetHeader) ?? d.allowBudgetHeader
        maxConcurrentInstances = try c.decodeIfPresent(Int.self, forKey: .maxConcurrentInstances) ?? d.maxConcurrentInstances
    }
}
