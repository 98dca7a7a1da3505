// APNs Sandbox — configuration of the APNs provider endpoint: behaviour, teams, keys, apps, devices.
import APNsProtocol

/// How the provider endpoint behaves where Apple leaves room (or tests need a knob).
public struct APNsSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// The environment of a request whose host is not one of Apple's (`localhost`, an IP, …).
    public var defaultEnvironment: String = "development"
    /// `autoRegister`: the first push to an unknown, well-formed token creates the device with the
    /// topic's app installed. `strict`: unknown tokens get `BadDeviceToken`.
    public var unknownDeviceTokens: String = "autoRegister"
    /// With token auth, a topic whose app is not configured becomes an app of the key's team
    /// (quick start). Off: such topics get `TopicDisallowed`.
    public var autoRegisterApps = true
    /// Provider tokens older than this get `ExpiredProviderToken` (Apple: one hour).
    public var tokenMaxAgeSeconds: Int64 = 3600
    /// Provider tokens issued further in the future than this get `InvalidProviderToken`.
    public var tokenClockSkewSeconds: Int64 = 60
    /// A new token on one connection sooner than this after the previous change gets
    /// `TooManyProviderTokenUpdates` (Apple: 20 minutes).
    public var tokenUpdateMinimumIntervalSeconds: Double = 1200
    /// SETTINGS_MAX_CONCURRENT_STREAMS until a push with a valid provider token (Apple: 1);
    /// 0 means the full limit from the start.
    public var streamsBeforeAuthentication = 1
    /// The reason for a key of the wrong environment: Apple documents `BadEnvironmentKeyIdInToken`,
    /// the live service has answered `BadEnvironmentKeyInToken`.
    public var environmentKeyReason = "BadEnvironmentKeyIdInToken"
    /// More pushes than this per second to one device token get 429 `TooManyRequests`; 0 = off.
    public var maxPushesPerSecondPerDevice = 0
    /// How many push records the in-memory log keeps.
    public var recentPushCapacity = 10_000

    public init() {}

    enum Keys: String, CodingKey, CaseIterable {
        case defaultEnvironment, unknownDeviceTokens, autoRegisterApps, tokenMaxAgeSeconds, tokenClockSkewSeconds
        case tokenUpdateMinimumIntervalSeconds, streamsBeforeAuthentication, environmentKeyReason
        case maxPushesPerSecondPerDevice, recentPushCapacity
    }

    public init(from decoder: any Decoder) throws {
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = APNsSettings()
        defaultEnvironment = try c.decodeIfPresent(String.self, forKey: .defaultEnvironment) ?? d.defaultEnvironment
        unknownDeviceTokens = try c.decodeIfPresent(String.self, forKey: .unknownDeviceTokens) ?? d.unknownDeviceTokens
        autoRegisterApps = try c.decodeIfPresent(Bool.self, forKey: .autoRegisterApps) ?? d.autoRegisterApps
        tokenMaxAgeSeconds = try c.decodeIfPresent(Int64.self, forKey: .tokenMaxAgeSeconds) ?? d.tokenMaxAgeSeconds
        tokenClockSkewSeconds = try c.decodeIfPresent(Int64.self, forKey: .tokenClockSkewSeconds) ?? d.tokenClockSkewSeconds
        tokenUpdateMinimumIntervalSeconds =
            try c.decodeIfPresent(Double.self, forKey: .tokenUpdateMinimumIntervalSeconds) ?? d.tokenUpdateMinimumIntervalSeconds
        streamsBeforeAuthentication =
            try c.decodeIfPresent(Int.self, forKey: .streamsBeforeAuthentication) ?? d.streamsBeforeAuthentication
        environmentKeyReason = try c.decodeIfPresent(String.self, forKey: .environmentKeyReason) ?? d.environmentKeyReason
        maxPushesPerSecondPerDevice =
            try c.decodeIfPresent(Int.self, forKey: .maxPushesPerSecondPerDevice) ?? d.maxPushesPerSecondPerDevice
        recentPushCapacity = try c.decodeIfPresent(Int.self, forKey: .recentPushCapacity) ?? d.recentPushCapacity
    }
}

/// A developer team: its signing keys and apps.
public struct TeamConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    /// A provider-token signing key (Apple's `.p8`).
    public struct Key: Codable, Sendable, Equatable, StrictlyKeyed {
        public var keyID: String
        /// The `.p8` (PKCS#8 private key) — the sandbox only needs its public half.
        public var privateKeyFile: String?
        /// Or just the public key (SubjectPublicKeyInfo PEM).
        public var publicKeyFile: String?
        /// `team` (every topic of the team) or `topics` (only `topics`).
        public var scope: String = "team"
        public var topics: [String] = []
        /// `development`, `production` or `both` (older keys work in both).
        public var environment: String = "both"

        public init(keyID: String, privateKeyFile: String? = nil, publicKeyFile: String? = nil, scope: String = "team",
                    topics: [String] = [], environment: String = "both") {
            self.keyID = keyID
            self.privateKeyFile = privateKeyFile
            self.publicKeyFile = publicKeyFile
            self.scope = scope
            self.topics = topics
            self.environment = environment
        }

        enum Keys: String, CodingKey, CaseIterable {
            case keyID, privateKeyFile, publicKeyFile, scope, topics, environment
        }

        public init(from decoder: any Decoder) throws {
            try Self.rejectUnknownKeys(in: decoder)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            keyID = try c.decode(String.self, forKey: .keyID)
            privateKeyFile = try c.decodeIfPresent(String.self, forKey: .privateKeyFile)
            publicKeyFile = try c.decodeIfPresent(String.self, forKey: .publicKeyFile)
            scope = try c.decodeIfPresent(String.self, forKey: .scope) ?? "team"
            topics = try c.decodeIfPresent([String].self, forKey: .topics) ?? []
            environment = try c.decodeIfPresent(String.self, forKey: .environment) ?? "both"
        }
    }

    public var teamID: String
    public var keys: [Key] = []
    /// Bundle IDs of the team's apps.
    public var apps: [String] = []

    public init(teamID: String, keys: [Key] = [], apps: [String] = []) {
        self.teamID = teamID
        self.keys = keys
        self.apps = apps
    }

    enum Keys: String, CodingKey, CaseIterable {
        case teamID, keys, apps
    }

    public init(from decoder: any Decoder) throws {
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        teamID = try c.decode(String.self, forKey: .teamID)
        keys = try c.decodeIfPresent([Key].self, forKey: .keys) ?? []
        apps = try c.decodeIfPresent([String].self, forKey: .apps) ?? []
    }
}

/// A device known from the start.
public struct DeviceConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    public var token: String
    public var environment: String = "development"
    public var locale: String = "en_US"
    /// Bundle IDs installed on the device.
    public var apps: [String] = []

    public init(token: String, environment: String = "development", locale: String = "en_US", apps: [String] = []) {
        self.token = token
        self.environment = environment
        self.locale = locale
        self.apps = apps
    }

    enum Keys: String, CodingKey, CaseIterable {
        case token, environment, locale, apps
    }

    public init(from decoder: any Decoder) throws {
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        token = try c.decode(String.self, forKey: .token)
        environment = try c.decodeIfPresent(String.self, forKey: .environment) ?? "development"
        locale = try c.decodeIfPresent(String.self, forKey: .locale) ?? "en_US"
        apps = try c.decodeIfPresent([String].self, forKey: .apps) ?? []
    }
}

/// An app with its localized strings and service extension (optional: `teams[].apps` is enough
/// for an app without strings).
public struct AppConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    public var bundleID: String
    public var teamID: String
    /// `Localizable.strings` per language: `{"en": {"KEY": "Hello %@"}, "fr": {…}}`.
    public var strings: [String: [String: String]] = [:]
    /// The service extension configuration (the extension runtime defines it), as given.
    public var serviceExtension: JSON?

    public init(bundleID: String, teamID: String, strings: [String: [String: String]] = [:], serviceExtension: JSON? = nil) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.strings = strings
        self.serviceExtension = serviceExtension
    }

    enum Keys: String, CodingKey, CaseIterable {
        case bundleID, teamID, strings, serviceExtension
    }

    public init(from decoder: any Decoder) throws {
        try Self.rejectUnknownKeys(in: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bundleID = try c.decode(String.self, forKey: .bundleID)
        teamID = try c.decode(String.self, forKey: .teamID)
        strings = try c.decodeIfPresent([String: [String: String]].self, forKey: .strings) ?? [:]
        serviceExtension = try c.decodeIfPresent(JSON.self, forKey: .serviceExtension)
    }
}
