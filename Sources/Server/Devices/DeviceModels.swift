// APNs Sandbox — the JSON shapes of the devices and apps API (documented in openapi.json).
import APNsProtocol
import Sandbox

/// A device as the API shows it.
struct DeviceDTO: Codable, Sendable {
    struct AppDTO: Codable, Sendable {
        var bundleId: String
        var installedAt: Int64
        var uninstalledAt: Int64?
        var badge: Int?
    }

    var token: String
    var environment: String
    var locale: String
    var online: Bool
    var apps: [AppDTO]
    /// Bundle IDs that have a key in the device keychain (the keys themselves are not shown).
    var keychain: [String]
    var createdAt: Int64
    var autoRegistered: Bool

    init(_ record: DeviceRecord) {
        token = record.token
        environment = record.environment.rawValue
        locale = record.locale
        online = record.isOnline
        apps = record.apps.map { AppDTO(bundleId: $0.bundleID, installedAt: $0.installedAt, uninstalledAt: $0.uninstalledAt, badge: $0.badge) }
        keychain = record.keys.keys.sorted()
        createdAt = record.createdAt
        autoRegistered = record.isAutoRegistered
    }
}

/// `POST /api/v1/devices`.
struct CreateDeviceRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["token", "environment", "locale", "online", "apps", "keys"]

    /// Hex; generated (32 random bytes) when absent.
    var token: String?
    var environment: String?
    var locale: String?
    var online: Bool?
    var apps: [String]?
    /// bundleId → base64 key for the device keychain.
    var keys: [String: String]?
}

/// `PATCH /api/v1/devices/{token}`.
struct UpdateDeviceRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["online", "locale", "installApps", "uninstallApps", "keys", "rotateToken"]

    var online: Bool?
    var locale: String?
    var installApps: [String]?
    var uninstallApps: [String]?
    var keys: [String: String]?
    /// true: the device gets a new random token (the old one answers 410 ExpiredToken… as Unregistered).
    var rotateToken: Bool?
}

/// An app as the API shows it.
struct AppDTO: Codable, Sendable {
    var bundleId: String
    var teamId: String
    var strings: [String: [String: String]]
    var serviceExtension: JSON?

    init(_ record: AppRecord) {
        bundleId = record.bundleID
        teamId = record.teamID
        strings = record.strings
        serviceExtension = record.serviceExtensionJSON.flatMap { try? JSON.parse($0) }
    }
}

/// `POST /api/v1/apps` and `PATCH /api/v1/apps/{bundleId}`.
struct AppRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["bundleId", "teamId", "strings", "serviceExtension"]

    var bundleId: String?
    var teamId: String?
    var strings: [String: [String: String]]?
    /// `.null` when the body says `"serviceExtension": null` (remove it); nil when the key is absent.
    var serviceExtension: JSON?

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        teamId = try c.decodeIfPresent(String.self, forKey: .teamId)
        strings = try c.decodeIfPresent([String: [String: String]].self, forKey: .strings)
        if c.contains(.serviceExtension) {
            serviceExtension = try c.decodeNil(forKey: .serviceExtension) ? .null : try c.decode(JSON.self, forKey: .serviceExtension)
        }
    }
}
