// APNs Sandbox — an app's service extension settings, parsed from `AppRecord.serviceExtensionJSON`.
import APNsProtocol

/// How an app's notification service extension runs (issue #5, `docs/extension-protocol.md`).
///
/// ```json
/// {"kind": "builtin", "budgetMs": 30000, "graceMs": 1000, "memoryLimitMB": 24,
///  "steps": [{"step": "decrypt"}, {"step": "attach-media"}, {"step": "rewrite", "title": "[Processed] {{title}}"}]}
/// {"kind": "exec", "path": "/usr/local/bin/my-extension", "arguments": ["--verbose"], "environment": {"K": "V"}}
/// {"kind": "webhook", "url": "http://127.0.0.1:9000/extension", "timeoutMs": 5000}
/// ```
///
/// `budgetMs` and `graceMs` default to the runtime's defaults (30 s and 1 s); `memoryLimitMB` defaults to 24
/// for `builtin` (iOS's figure, §4.4) and 64 for `exec` (a Linux process starts heavier than an iOS extension);
/// a webhook runs elsewhere and has no memory limit. Unknown keys are rejected so that a typo does not
/// silently change behaviour; `"comment"` is allowed anywhere for notes.
public struct ExtensionConfiguration: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Steps run in order inside the instance, critical ones first.
        case builtin(steps: [BuiltinStep])
        /// One process per notification speaking the exec protocol.
        case exec(ExecSettings)
        /// One HTTP POST per notification; the response body is the content.
        case webhook(RemoteSettings)

        /// `builtin`, `exec` or `webhook`.
        public var name: String {
            switch self {
            case .builtin: "builtin"
            case .exec: "exec"
            case .webhook: "webhook"
            }
        }
    }

    public struct ExecSettings: Sendable, Equatable {
        /// The program: an absolute path, a path relative to the server's working directory, or a bare name
        /// looked up in the clean `PATH` (`/usr/local/bin:/usr/bin:/bin`).
        public var path: String
        public var arguments: [String]
        /// Extra environment entries (may override `PATH` and `LANG`, not the sandbox's own variables).
        public var environment: [String: String]

        public init(path: String, arguments: [String] = [], environment: [String: String] = [:]) {
            self.path = path
            self.arguments = arguments
            self.environment = environment
        }
    }

    /// The `webhook` kind's settings: a remote extension that answers each request over HTTP.
    public struct RemoteSettings: Sendable, Equatable {
        /// An `http://` or `https://` URL.
        public var url: String
        /// The HTTP request's own timeout; nil = the budget plus grace. Running out of it is an error
        /// (`original-error`), running out of the budget plus grace a timeout (`original-timeout`).
        public var timeoutMilliseconds: Int64?

        public init(url: String, timeoutMilliseconds: Int64? = nil) {
            self.url = url
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    public var kind: Kind
    /// Time from `didReceive` to `timeWillExpire`; nil = the runtime's default.
    public var budgetMilliseconds: Int64?
    /// Time after `timeWillExpire` in which content still counts (`best-attempt`); nil = the runtime's default.
    public var graceMilliseconds: Int64?
    /// Resident memory limit in MiB (builtin: simulated by the `exceed-memory` behaviour; exec: enforced).
    public var memoryLimitMB: Int

    /// Largest accepted `budgetMs` (and budget header value): 100 s. With the largest grace and the exec settle
    /// time an instance always ends well within the delivery engine's 120 s extension watchdog.
    public static let maxBudgetMilliseconds: Int64 = 100_000
    /// Largest accepted `graceMs`: 10 s.
    public static let maxGraceMilliseconds: Int64 = 10_000

    public init(kind: Kind, budgetMilliseconds: Int64? = nil, graceMilliseconds: Int64? = nil, memoryLimitMB: Int? = nil) {
        self.kind = kind
        self.budgetMilliseconds = budgetMilliseconds
        self.graceMilliseconds = graceMilliseconds
        self.memoryLimitMB = memoryLimitMB ?? Self.defaultMemoryLimitMB(for: kind)
    }

    static func defaultMemoryLimitMB(for kind: Kind) -> Int {
        switch kind {
        case .builtin: 24
        case .exec: 64
        case .webhook: 0
        }
    }

    /// Parses and validates `serviceExtensionJSON`.
    /// - Throws: ``ExtensionConfigurationError`` naming the offending key (`steps[1].behavior: …`).
    public init(json text: String) throws {
        let root: JSON
        do {
            root = try JSON.parse(text)
        } catch {
            throw ExtensionConfigurationError("", "not valid JSON (\(error))")
        }
        let object = try ConfigObject(root, path: "")
        let kindName = try object.requiredString("kind")
        let common = ["kind", "budgetMs", "graceMs", "memoryLimitMB", "comment"]
        let kind: Kind
        switch kindName {
        case "builtin":
            try object.rejectUnknownKeys(allowed: common + ["steps"])
            let steps = try object.array("steps") ?? []
            kind = .builtin(steps: try steps.enumerated().map { index, value in
                try BuiltinStep(value, path: "steps[\(index)]")
            })
        case "exec":
            try object.rejectUnknownKeys(allowed: common + ["path", "arguments", "environment"])
            let path = try object.requiredString("path")
            guard !path.isEmpty else { throw ExtensionConfigurationError("path", "must not be empty") }
            let arguments = try (object.array("arguments") ?? []).enumerated().map { index, value in
                guard let text = value.string else {
                    throw ExtensionConfigurationError("arguments[\(index)]", "must be a string")
                }
                return text
            }
            var environment: [String: String] = [:]
            for (key, value) in try object.object("environment") ?? [] {
                guard let text = value.string else {
                    throw ExtensionConfigurationError("environment.\(key)", "must be a string")
                }
                guard !key.isEmpty, !key.contains("="), !key.contains("\0"), !text.contains("\0") else {
                    throw ExtensionConfigurationError("environment.\(key)", "is not a valid environment entry")
                }
                guard !Self.reservedEnvironment.contains(key), !key.hasPrefix("APNS_SANDBOX_") else {
                    throw ExtensionConfigurationError(
                        "environment.\(key)", "is set by the sandbox (HOME, TMPDIR and APNS_SANDBOX_* are reserved)")
                }
                environment[key] = text
            }
            kind = .exec(ExecSettings(path: path, arguments: arguments, environment: environment))
        case "webhook":
            try object.rejectUnknownKeys(allowed: common + ["url", "timeoutMs"])
            let url = try object.requiredString("url")
            let lower = url.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), url.count > 8 else {
                throw ExtensionConfigurationError("url", "must be an http:// or https:// URL, not \"\(url)\"")
            }
            let timeout = try object.milliseconds("timeoutMs", range: 1...Self.maxBudgetMilliseconds)
            kind = .webhook(RemoteSettings(url: url, timeoutMilliseconds: timeout))
        default:
            throw ExtensionConfigurationError("kind", "must be \"builtin\", \"exec\" or \"webhook\", not \"\(kindName)\"")
        }
        self.kind = kind
        budgetMilliseconds = try object.milliseconds("budgetMs", range: 1...Self.maxBudgetMilliseconds)
        graceMilliseconds = try object.milliseconds("graceMs", range: 0...Self.maxGraceMilliseconds)
        if let limit = try object.integer("memoryLimitMB") {
            guard (1...65_536).contains(limit) else {
                throw ExtensionConfigurationError("memoryLimitMB", "must be between 1 and 65536, not \(limit)")
            }
            memoryLimitMB = limit
        } else {
            memoryLimitMB = Self.defaultMemoryLimitMB(for: kind)
        }
    }

    /// Checks `serviceExtensionJSON` without keeping the result (for the apps API: answer 400 early).
    /// - Throws: ``ExtensionConfigurationError``.
    public static func validate(json text: String) throws {
        _ = try ExtensionConfiguration(json: text)
    }

    static let reservedEnvironment: Set<String> = ["HOME", "TMPDIR"]
}

/// A configuration that cannot be used, with the key at fault.
public struct ExtensionConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The offending key as a path (`steps[2].behavior`), empty for the document itself.
    public let path: String
    public let message: String

    init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String {
        path.isEmpty ? "service extension configuration: \(message)"
            : "service extension configuration: \(path) \(message)"
    }
}

/// A JSON object being read as configuration: typed getters that throw errors naming the key.
struct ConfigObject {
    let members: [(String, JSON)]
    let path: String

    init(_ value: JSON, path: String) throws {
        guard let members = value.members else {
            throw ExtensionConfigurationError(path, "must be a JSON object")
        }
        self.members = members
        self.path = path
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func value(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.0 == key })?.1, value != .null else { return nil }
        return value
    }

    func rejectUnknownKeys(allowed: [String]) throws {
        if let unknown = members.first(where: { !allowed.contains($0.0) }) {
            throw ExtensionConfigurationError(
                keyPath(unknown.0), "is not a known key here (known: \(allowed.filter { $0 != "comment" }.joined(separator: ", ")))")
        }
    }

    func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.string else { throw ExtensionConfigurationError(keyPath(key), "must be a string") }
        return text
    }

    func requiredString(_ key: String) throws -> String {
        guard let text = try string(key) else { throw ExtensionConfigurationError(keyPath(key), "is required") }
        return text
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.bool else { throw ExtensionConfigurationError(keyPath(key), "must be true or false") }
        return flag
    }

    func integer(_ key: String) throws -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.int else { throw ExtensionConfigurationError(keyPath(key), "must be an integer") }
        return number
    }

    func milliseconds(_ key: String, range: ClosedRange<Int64>) throws -> Int64? {
        guard let number = try integer(key) else { return nil }
        guard range.contains(Int64(number)) else {
            throw ExtensionConfigurationError(
                keyPath(key), "must be between \(range.lowerBound) and \(range.upperBound) ms, not \(number)")
        }
        return Int64(number)
    }

    func array(_ key: String) throws -> [JSON]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw ExtensionConfigurationError(keyPath(key), "must be an array") }
        return items
    }

    func object(_ key: String) throws -> [(String, JSON)]? {
        guard let value = value(key) else { return nil }
        guard let members = value.members else { throw ExtensionConfigurationError(keyPath(key), "must be an object") }
        return members
    }
}
