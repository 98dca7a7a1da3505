// APNs Sandbox — configuration of durable storage and of delivery to simulated devices.

/// Where and how records are kept.
public struct StorageSettings: Codable, Sendable, Equatable {
    /// The SQLite file, relative to the data directory.
    public var file = "sandbox.sqlite"
    /// `full` (a committed push survives power loss) or `normal` (survives a crash of the process).
    public var synchronous = "full"
    /// Keep at most this many notification records (the oldest final ones are pruned).
    public var maxRecords = 1_000_000
    /// Prune final records older than this.
    public var maxAgeDays = 30.0

    public init() {}

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StorageSettings()
        file = try c.decodeIfPresent(String.self, forKey: .file) ?? d.file
        synchronous = try c.decodeIfPresent(String.self, forKey: .synchronous) ?? d.synchronous
        maxRecords = try c.decodeIfPresent(Int.self, forKey: .maxRecords) ?? d.maxRecords
        maxAgeDays = try c.decodeIfPresent(Double.self, forKey: .maxAgeDays) ?? d.maxAgeDays
    }
}

/// How simulated devices receive pushes.
public struct DeliverySettings: Codable, Sendable, Equatable {
    /// Priority 5 and 1 pushes are delivered after this delay (batched); 0 = at once.
    public var lowPriorityDelayMilliseconds: Int64 = 0
    /// Background (silent) pushes beyond this many per app per hour are held (Apple: 2–3); 0 = no throttle.
    public var backgroundPushesPerHour = 3

    public init() {}

    public init(from decoder: any Decoder) throws {
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
