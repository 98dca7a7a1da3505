// APNs Sandbox — the admin access policy from the configuration, and the admin token's sources.
import Crypto
import Foundation
import Glibc
import Support

extension AdminAccessPolicy {
    /// The file a generated admin token is kept in, under the data directory.
    static let generatedTokenFile = "admin-token"

    /// The policy for `configuration`: whether a token is required (``AdminSettings/Authentication``)
    /// and which one. Reads `admin.tokenFile`, or reads or creates `<data>/admin-token` when a token is
    /// required and none is configured.
    /// - Throws: ``ConfigurationError`` when the token file cannot be read or written, or is too short.
    static func make(configuration: SandboxConfiguration, logger: Logger) throws -> AdminAccessPolicy {
        let admin = configuration.admin
        let adminListeners = configuration.listeners.filter(\.admin)
        let exposed = configuration.listenersReachableFromOtherMachines.filter(\.admin)
        let requiresToken = switch admin.authentication {
        case .required: true
        case .off: false
        case .auto: !exposed.isEmpty
        }
        var token: [UInt8] = []
        if requiresToken {
            let (text, source) = try resolveToken(configuration)
            token = Array(text.utf8)
            let reason = admin.authentication == .required
                ? "admin.authentication is required"
                : "not loopback-only: listener \(exposed.map(\.name).joined(separator: ", "))"
            logger.notice("admin API requires a token", [
                ("reason", reason), ("token", source),
                ("use", "Authorization: Bearer <token>, or Basic \(admin.username):<token>"),
            ])
        } else if admin.authentication == .off && !exposed.isEmpty {
            logger.warning("admin API open to every client: admin.authentication is off on a listener that is not loopback-only", [
                ("listeners", exposed.map(\.name).joined(separator: ",")),
            ])
        }
        let appleNames = ["api.sandbox.push.apple.com", "api.development.push.apple.com", "api.push.apple.com"]
        let hosts = (appleNames + configuration.tls.extraNames + admin.allowedHosts).map { $0.lowercased() }
        return AdminAccessPolicy(
            requiresToken: requiresToken, token: token, username: admin.username,
            adminListeners: Set(adminListeners.map(\.name)), allowedHosts: Set(hosts),
            allowedOrigins: Set(admin.allowedOrigins.compactMap(AdminOrigin.init)))
    }

    /// The admin token and where it came from (for the log: never the token itself).
    private static func resolveToken(_ configuration: SandboxConfiguration) throws -> (String, String) {
        let admin = configuration.admin
        if let token = admin.token { return (token, "admin.token (configuration or APNS_SANDBOX_ADMIN_TOKEN)") }
        if let file = admin.tokenFile {
            let path = CredentialTools.resolve(file, against: configuration.baseDirectory)
            return (try readToken(path, key: "admin.tokenFile"), path)
        }
        let path = configuration.dataDirectory + "/" + generatedTokenFile
        if FileManager.default.fileExists(atPath: path) {
            return (try readToken(path, key: path), path)
        }
        let token = Hex.encode(SecureRandom.bytes(32))
        // Written whole under a temporary name, synced, then linked into place: a crash part-way leaves no
        // empty or partial token file behind (which every later start would refuse).
        let temporary = path + ".new-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigurationError("cannot create the admin token file \(path): \(String(cString: strerror(errno)))")
        }
        defer { unlink(temporary) }
        let bytes = Array((token + "\n").utf8)
        let written = write(fd, bytes, bytes.count)
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else {
            throw ConfigurationError("cannot write the admin token file \(path): \(String(cString: strerror(errno)))")
        }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return (try readToken(path, key: path), path) }
            throw ConfigurationError("cannot create the admin token file \(path): \(String(cString: strerror(errno)))")
        }
        return (token, "\(path) (generated now; read it from there)")
    }

    private static func readToken(_ path: String, key: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines)
        else {
            throw ConfigurationError("\(key): cannot read the admin token file \(path)")
        }
        guard text.count >= AdminSettings.minimumTokenLength else {
            throw ConfigurationError("\(key): the admin token in \(path) must be at least \(AdminSettings.minimumTokenLength) characters")
        }
        return text
    }
}
