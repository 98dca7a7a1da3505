// APNs Sandbox — the dashboard's files (HTML, CSS, JavaScript), built into the binary.
import Foundation

/// One file of the dashboard, ready to serve.
public struct DashboardAsset: Sendable {
    public let name: String
    public let contentType: String
    public let bytes: [UInt8]
    /// A strong validator of `bytes` (quoted, as `ETag` carries it).
    public let etag: String

    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
        contentType = Self.contentType(of: name)
        etag = "\"" + String(Self.fnv1a(bytes), radix: 16) + "\""
    }

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        case "txt", "md": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// FNV-1a, 64 bits: cheap, and a validator need not resist anyone.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}

/// Where the dashboard's files come from: the copies built into the binary (`Sources/Dashboard/Assets`,
/// embedded by SwiftPM's `embedInCode`), or — for working on the dashboard without rebuilding — a directory
/// read at every request (`dashboard.assetsDirectory`).
public enum DashboardAssets: Sendable {
    case embedded
    case directory(String)

    /// The names of the built-in files.
    public static var names: [String] { EmbeddedFiles.all.map(\.0).sorted() }

    /// Whether the asset is read from disk on every request (the caller then reads it off the event loop).
    public var readsFiles: Bool {
        if case .directory = self { return true }
        return false
    }

    /// The file `name`, or nil when the dashboard has no such file.
    public func asset(named name: String) -> DashboardAsset? {
        switch self {
        case .embedded:
            return Self.builtIn[name]
        case .directory(let directory):
            // One flat directory: a name with a slash or a leading dot never leaves it.
            guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/"),
                let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
            return DashboardAsset(name: name, bytes: Array(data))
        }
    }

    private static let builtIn: [String: DashboardAsset] = {
        var assets: [String: DashboardAsset] = [:]
        for (name, bytes) in EmbeddedFiles.all { assets[name] = DashboardAsset(name: name, bytes: bytes) }
        return assets
    }()
}
