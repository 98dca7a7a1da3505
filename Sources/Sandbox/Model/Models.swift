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

/// The apps on a device, by bundle ID: a short array searched in order (a device has one app or a few; a
/// dictionary for each of a million devices cost about 120 bytes more per device than this).
public struct InstalledApps: Sendable, Equatable {
    private var list: [InstalledApp]

    /// The apps; a bundle ID listed twice keeps its last entry.
    public init(_ apps: [InstalledApp] = []) {
        list = []
        list.reserveCapacity(apps.count)
        for app in apps { self[app.bundleID] = app }
    }

    public subscript(bundleID: String) -> InstalledApp? {
        get { list.first { $0.bundleID == bundleID } }
        set {
            let index = list.firstIndex { $0.bundleID == bundleID }
            switch (index, newValue) {
            case (let index?, let app?): list[index] = app
            case (let index?, nil): list.remove(at: index)
            case (nil, let app?): list.append(app)
            case (nil, nil): break
            }
        }
    }

    /// Every app, in no particular order.
    public var values: [InstalledApp] { list }
    public var count: Int { list.count }

    public static func == (lhs: InstalledApps, rhs: InstalledApps) -> Bool {
        lhs.list.count == rhs.list.count && lhs.list.allSatisfy { rhs[$0.bundleID] == $0 }
    }
}

/// A simulated device, identified by its token in one environment.
public struct Device: Sendable, Equatable {
    public var token: DeviceToken
    public var environment: APNsEnvironment
    public var locale: String
    public var apps: InstalledApps
    /// True when the device was created by the first push to an unknown token.
    public var isAutoRegistered: Bool

    public init(
        token: DeviceToken, environment: APNsEnvironment, locale: String = "en_US", apps: [InstalledApp] = [],
        isAutoRegistered: Bool = false
    ) {
        self.token = token
        self.environment = environment
        self.locale = locale
        self.apps = InstalledApps(apps)
        self.isAutoRegistered = isAutoRegistered
    }
}
