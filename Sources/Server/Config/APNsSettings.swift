// APNs Sandbox — configuration of the APNs provider endpoint: behaviour, teams, keys, apps, devices.
import APNsProtocol
import Sandbox

/// How the provider endpoint behaves where Apple leaves room (or tests need a knob).
public struct APNsSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// The environment of a request whose host is not one of Apple's (`localhost`, an IP, …).
    public var defaultEnvironment = APNsEnvironment.development
    /// `autoRegister`: the first push to an unknown, well-formed token creates the device with the
    /// topic's app installed. `strict`: unknown tokens get `BadDeviceToken`.
    public var unknownDeviceTokens = DeviceRegistry.UnknownTokenPolicy.autoRegister
    /// With token auth, a topic whose app is not configured becomes an app of the key's team
    /// (quick start). Off: such topics get `TopicDisallowed`.
    public var autoRegisterApps = true
    /// Provider tokens older than this get `ExpiredProviderToken` (Apple: one hour).
    public var tokenMaxAgeSeconds: ConfigDuration<InWholeSeconds> = 3600
    /// Provider tokens issued further in the future than this get `InvalidProviderToken`.
    public var tokenClockSkewSeconds: ConfigDuration<InWholeSeconds> = 60
    /// A new token on one connection sooner than this after the previous change gets
    /// `TooManyProviderTokenUpdates` (Apple: 20 minutes).
    public var tokenUpdateMinimumIntervalSeconds: ConfigDuration<InSeconds> = 1200
    /// SETTINGS_MAX_CONCURRENT_STREAMS until a push with a valid provider token (Apple: 1);
    /// 0 means the full limit from the start.
    public var streamsBeforeAuthentication = 1
    /// The reason for a key of the wrong environment: Apple documents `BadEnvironmentKeyIdInToken`,
    /// the live service has answered `BadEnvironmentKeyInToken`.
    public var environmentKeyReason = EnvironmentKeyReason.badEnvironmentKeyIdInToken
    /// More pushes than this per second to one device token get 429 `TooManyRequests`; 0 = off.
    public var maxPushesPerSecondPerDevice = 0
    /// How many push records the in-memory log keeps.
    public var recentPushCapacity = 10_000

    public init() {}

    /// The two reasons `environmentKeyReason` may name.
    public enum EnvironmentKeyReason: String, Sendable, ConfigurationEnum {
        case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
        case badEnvironmentKeyInToken = "BadEnvironmentKeyInToken"

        var reason: APNsReason {
            switch self {
            case .badEnvironmentKeyIdInToken: .badEnvironmentKeyIdInToken
            case .badEnvironmentKeyInToken: .badEnvironmentKeyInToken
            }
        }
    }

    enum Keys: String, CodingKey, CaseIterable {
        case defaultEnvironment, unknownDeviceTokens, autoRegisterApps, tokenMaxAgeSeconds, tokenClockSkewSeconds
        case tokenUpdateMinimumIntervalSeconds, streamsBeforeAuthentication, environmentKeyReason
        case maxPushesPerSecondPerDevice, recentPushCapacity
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        defaultEnvironment = try section(.defaultEnvironment, \.defaultEnvironment)
        unknownDeviceTokens = try section(.unknownDeviceTokens, \.unknownDeviceTokens)
        autoRegisterApps = try section(.autoRegisterApps, \.autoRegisterApps)
        tokenMaxAgeSeconds = try section(.tokenMaxAgeSeconds, \.tokenMaxAgeSeconds)
        tokenClockSkewSeconds = try section(.tokenClockSkewSeconds, \.tokenClockSkewSeconds)
        tokenUpdateMinimumIntervalSeconds = try section(.tokenUpdateMinimumIntervalSeconds, \.tokenUpdateMinimumIntervalSeconds)
        streamsBeforeAuthentication = try section(.streamsBeforeAuthentication, \.streamsBeforeAuthentication)
        environmentKeyReason = try section(.environmentKeyReason, \.environmentKeyReason)
        maxPushesPerSecondPerDevice = try section(.maxPushesPerSecondPerDevice, \.maxPushesPerSecondPerDevice)
        recentPushCapacity = try section(.recentPushCapacity, \.recentPushCapacity)
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
        public var scope: Scope
        public var topics: [String]
        /// `development`, `production` or `both` (older keys work in both).
        public var environment: Environment

        public enum Scope: String, Sendable, ConfigurationEnum {
            case team, topics
        }

        public enum Environment: String, Sendable, ConfigurationEnum {
            case development, production, both

            /// The one environment the key is valid in; nil for `both`.
            var apnsEnvironment: APNsEnvironment? {
                switch self {
                case .development: .development
                case .production: .production
                case .both: nil
                }
            }
        }

        public init(keyID: String, privateKeyFile: String? = nil, publicKeyFile: String? = nil, scope: Scope = .team,
                    topics: [String] = [], environment: Environment = .both) {
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
            let section = try ConfigSection(decoder, defaults: Key(keyID: ""))
            keyID = try section.required(.keyID)
            privateKeyFile = try section(.privateKeyFile, \.privateKeyFile)
            publicKeyFile = try section(.publicKeyFile, \.publicKeyFile)
            scope = try section(.scope, \.scope)
            topics = try section(.topics, \.topics)
            environment = try section(.environment, \.environment)
        }
    }

    public var teamID: String
    public var keys: [Key]
    /// Bundle IDs of the team's apps.
    public var apps: [String]

    public init(teamID: String, keys: [Key] = [], apps: [String] = []) {
        self.teamID = teamID
        self.keys = keys
        self.apps = apps
    }

    enum Keys: String, CodingKey, CaseIterable {
        case teamID, keys, apps
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: TeamConfiguration(teamID: ""))
        teamID = try section.required(.teamID)
        keys = try section(.keys, \.keys)
        apps = try section(.apps, \.apps)
    }
}

/// A device known from the start.
public struct DeviceConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    public var token: String
    public var environment: APNsEnvironment
    public var locale: String
    /// Bundle IDs installed on the device.
    public var apps: [String]

    public init(token: String, environment: APNsEnvironment = .development, locale: String = "en_US", apps: [String] = []) {
        self.token = token
        self.environment = environment
        self.locale = locale
        self.apps = apps
    }

    enum Keys: String, CodingKey, CaseIterable {
        case token, environment, locale, apps
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: DeviceConfiguration(token: ""))
        token = try section.required(.token)
        environment = try section(.environment, \.environment)
        locale = try section(.locale, \.locale)
        apps = try section(.apps, \.apps)
    }
}

/// An app with its localized strings and service extension (optional: `teams[].apps` is enough
/// for an app without strings).
public struct AppConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    public var bundleID: String
    public var teamID: String
    /// `Localizable.strings` per language: `{"en": {"KEY": "Hello %@"}, "fr": {…}}`.
    public var strings: [String: [String: String]]
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
        let section = try ConfigSection(decoder, defaults: AppConfiguration(bundleID: "", teamID: ""))
        bundleID = try section.required(.bundleID)
        teamID = try section.required(.teamID)
        strings = try section(.strings, \.strings)
        serviceExtension = try section(.serviceExtension, \.serviceExtension)
    }
}
