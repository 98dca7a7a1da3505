// APNs Sandbox — configuration of the web dashboard served at `/`.

/// `dashboard`: whether `/` serves the web dashboard, and from where its files come.
public struct DashboardSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// `/` and `/dashboard/…` serve the dashboard (on listeners that serve the admin side).
    public var enabled = true
    /// Serve the dashboard's files from this directory, read at every request, instead of the copies built
    /// into the binary: for working on `Sources/Dashboard/Assets` without rebuilding. Relative to the
    /// configuration file.
    public var assetsDirectory: String?

    public init(enabled: Bool = true, assetsDirectory: String? = nil) {
        self.enabled = enabled
        self.assetsDirectory = assetsDirectory
    }

    enum Keys: String, CodingKey, CaseIterable {
        case enabled, assetsDirectory
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        enabled = try section(.enabled, \.enabled)
        assetsDirectory = try section(.assetsDirectory, \.assetsDirectory)
    }
}
