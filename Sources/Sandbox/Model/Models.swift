// APNs Sandbox — the simulated world: apps and devices.
import APNsProtocol

/// An app the sandbox knows: a bundle ID owned by a team.
public struct App: Sendable, Equatable, Codable {
    public var bundleID: String
    public var teamID: String

    public init(bundleID: String, teamID: String) {
        self.bundleID = bundleID
        self.teamID = teamID
    }
}

/// One app on one device: when it was installed and, if so, when it was uninstalled.
public struct InstalledApp: Sendable, Equatable {
    public var bundleID: String
    /// Milliseconds since the epoch.
    public var installedAt: Int64
    /// Milliseconds since the epoch; pushes after this get 410 `Unregistered`.
    public var uninstalledAt: Int64?

    public init(bundleID: String, installedAt: Int64, uninstalledAt: Int64? = nil) {
        self.bundleID = bundleID
        self.installedAt = installedAt
        self.uninstalledAt = uninstalledAt
    }
}

/// A simulated device, identified by its token in one environment.
public struct Device: Sendable, Equatable {
    public var token: DeviceToken
    public var environment: APNsEnvironment
    public var locale: String
    public var apps: [String: InstalledApp]
    /// True when the device was created by the first push to an unknown token.
    public var isAutoRegistered: Bool

    public init(
        token: DeviceToken, environment: APNsEnvironment, locale: String = "en_US", apps: [InstalledApp] = [],
        isAutoRegistered: Bool = false
    ) {
        self.token = token
        self.environment = environment
        self.locale = locale
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { _, last in last })
        self.isAutoRegistered = isAutoRegistered
    }
}
