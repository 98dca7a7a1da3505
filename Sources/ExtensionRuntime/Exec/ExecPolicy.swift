// APNs Sandbox — which programs exec extensions may run.
import Glibc

/// The programs `exec` extensions may start (docs/security.md: no program runs because of a network
/// request unless the operator allowed it).
///
/// Entries are files or directories (ending in `/`: every program under them). A configured `path` is
/// resolved the way the extension would be started (relative to the server's working directory, bare
/// names through the search path) and then with every symbolic link followed, so neither `..` nor a link
/// leads out of an allowed place. Entries are resolved the same way when checked, so an entry may name a
/// program that is built after the server started.
public struct ExecPolicy: Sendable, Equatable {
    private enum Rule: Sendable, Equatable {
        case any
        case listed([String])
    }

    private let rule: Rule

    /// Every program may run (the runtime's default; the server always sets a list).
    public static let unrestricted = ExecPolicy(rule: .any)

    private init(rule: Rule) {
        self.rule = rule
    }

    /// Only programs that are, or lie under, one of `entries` (absolute or relative to the working
    /// directory; directories end in `/`).
    public init(allowing entries: [String]) {
        rule = .listed(entries)
    }

    /// The search path for bare program names (`ExecDriver`'s clean `PATH`).
    public static let defaultSearchPath = "/usr/local/bin:/usr/bin:/bin"

    /// Why `path` may not run, or nil when it may.
    /// - Parameter searchPath: Where a bare name is looked up (the extension's own `PATH`, if it sets one).
    public func problem(running path: String, searchPath: String = ExecPolicy.defaultSearchPath) -> String? {
        guard case .listed(let entries) = rule else { return nil }
        guard let program = Self.canonicalProgram(path, searchPath: searchPath) else {
            return "exec extension \(path): no such program"
        }
        for entry in entries {
            if entry.hasSuffix("/") {
                if let directory = Self.realPath(String(entry.dropLast())), program.hasPrefix(directory + "/") {
                    return nil
                }
            } else if Self.canonicalProgram(entry, searchPath: Self.defaultSearchPath) == program {
                return nil
            }
        }
        return "exec extension \(path) (\(program)) is not allowed: only programs of the configuration file's "
            + "apps or listed in extensions.allowedExecutables may run"
    }

    /// The entry that allows exactly the program `settings` runs: its path resolved the way it will be
    /// started (with the extension's own `PATH` for a bare name), links followed; the path as given when it
    /// names no program yet (it is resolved again when checked).
    public static func entry(allowing settings: ExtensionConfiguration.ExecSettings) -> String {
        canonicalProgram(settings.path, searchPath: settings.environment["PATH"] ?? defaultSearchPath) ?? settings.path
    }

    /// The file `path` starts, resolved as the spawn resolves it, with links followed; nil if there is none.
    static func canonicalProgram(_ path: String, searchPath: String) -> String? {
        guard let resolved = try? ChildProcess.resolve(path, searchPath: searchPath) else { return nil }
        return realPath(resolved)
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
