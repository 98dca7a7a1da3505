// APNs Sandbox — the server's configuration: JSON file, then environment, then flags.
import APNsProtocol
import Foundation
import Sandbox
import Support

/// Everything `apns-sandbox serve` can be told. Decoded from JSON (`config/sandbox.json`);
/// every key is optional and falls back to the defaults below.
public struct SandboxConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    /// One listening socket.
    public struct Listener: Codable, Sendable, Equatable, StrictlyKeyed {
        public var name: String
        public var host: String
        public var port: Int
        public var tls: Bool
        /// The APNs environment for requests whose host is not one of Apple's; nil = `apns.defaultEnvironment`.
        public var environment: APNsEnvironment?
        /// Whether this listener serves the admin side (`/api/v1`); false: only the provider endpoint,
        /// `/healthz`, `/readyz`, `/ca.pem` (docs/security.md).
        public var admin: Bool

        public init(
            name: String, host: String, port: Int, tls: Bool, environment: APNsEnvironment? = nil, admin: Bool = true
        ) {
            self.name = name
            self.host = host
            self.port = port
            self.tls = tls
            self.environment = environment
            self.admin = admin
        }

        enum Keys: String, CodingKey, CaseIterable {
            case name, host, port, tls, environment, admin
        }

        public init(from decoder: any Decoder) throws {
            let section = try ConfigSection(decoder, defaults: Listener(name: "", host: "", port: 0, tls: false))
            name = try section.required(.name)
            host = try section.required(.host)
            port = try section.required(.port)
            tls = try section.required(.tls)
            environment = try section(.environment, \.environment)
            admin = try section(.admin, \.admin)
        }
    }

    /// Server certificate: generated into the data directory unless both files are given.
    public struct TLS: Codable, Sendable, Equatable, StrictlyKeyed {
        public var certificateFile: String?
        public var privateKeyFile: String?
        /// More DNS names or IPs for the generated server certificate.
        public var extraNames: [String]

        public init(certificateFile: String? = nil, privateKeyFile: String? = nil, extraNames: [String] = []) {
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
            self.extraNames = extraNames
        }

        enum Keys: String, CodingKey, CaseIterable {
            case certificateFile, privateKeyFile, extraNames
        }

        public init(from decoder: any Decoder) throws {
            let section = try ConfigSection(decoder, defaults: Self())
            certificateFile = try section(.certificateFile, \.certificateFile)
            privateKeyFile = try section(.privateKeyFile, \.privateKeyFile)
            extraNames = try section(.extraNames, \.extraNames)
        }
    }

    public var dataDirectory = "./data"
    public var logLevel = Logger.Level.info
    public var requestLogging = false
    /// Event loops (threads); 0 = one per core.
    public var eventLoops = 0
    /// Loopback only by default: reachable from this machine, with no admin token needed. Listening on
    /// every interface (`--host ::`) makes the admin side require the token (``AdminSettings``).
    public var listeners: [Listener] = [
        Listener(name: "tls", host: "127.0.0.1", port: 2197, tls: true),
        Listener(name: "cleartext", host: "127.0.0.1", port: 8080, tls: false),
    ]
    public var tls = TLS()
    public var limits = Limits()
    public var apns = APNsSettings()
    public var storage = StorageSettings()
    public var delivery = DeliverySettings()
    public var extensions = ExtensionSettings()
    public var events = EventSettings()
    public var webhooks = WebhookConfiguration()
    public var admin = AdminSettings()
    public var clock = ClockSettings()
    public var dashboard = DashboardSettings()
    public var teams: [TeamConfiguration] = []
    /// Apps with strings or a service extension (seeded into the store at every start).
    public var apps: [AppConfiguration] = []
    public var devices: [DeviceConfiguration] = []
    /// Fault rules in force from the start (and after every reset), before those the API adds (docs/faults.md).
    var faults: [FaultRuleSpec] = []

    public init() {}

    enum Keys: String, CodingKey, CaseIterable {
        case dataDirectory, logLevel, requestLogging, eventLoops, listeners, tls, limits, apns, storage, delivery
        case extensions, events, webhooks, admin, clock, dashboard, teams, apps, devices, faults
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        dataDirectory = try section(.dataDirectory, \.dataDirectory)
        logLevel = try section(.logLevel, \.logLevel)
        requestLogging = try section(.requestLogging, \.requestLogging)
        eventLoops = try section(.eventLoops, \.eventLoops)
        listeners = try section(.listeners, \.listeners)
        tls = try section(.tls, \.tls)
        limits = try section(.limits, \.limits)
        apns = try section(.apns, \.apns)
        storage = try section(.storage, \.storage)
        delivery = try section(.delivery, \.delivery)
        extensions = try section(.extensions, \.extensions)
        events = try section(.events, \.events)
        webhooks = try section(.webhooks, \.webhooks)
        admin = try section(.admin, \.admin)
        clock = try section(.clock, \.clock)
        dashboard = try section(.dashboard, \.dashboard)
        teams = try section(.teams, \.teams)
        apps = try section(.apps, \.apps)
        devices = try section(.devices, \.devices)
        faults = try section(.faults, \.faults)
    }

    /// Where relative paths in the file (key files) are resolved; set by `load(path:)`.
    public var baseDirectory: String?

    /// Reads a JSON configuration file.
    public static func load(path: String) throws -> SandboxConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read configuration file \(path)")
        }
        var configuration = try decode(Array(data), source: path)
        // `my.json` (a bare name) lives in the working directory: its relative paths are taken from
        // there, not from `/`.
        let directory = (path as NSString).deletingLastPathComponent
        configuration.baseDirectory = directory.isEmpty ? "." : directory
        return configuration
    }

    /// Reads a JSON configuration from its bytes (not yet validated: see ``validate()``); `source` names it in
    /// errors. Fuzzed (`apns-sandbox-fuzz config`).
    /// - Throws: ``ConfigurationError`` naming the line and column of a syntax error, or the key and what is wrong.
    public static func decode(_ bytes: [UInt8], source: String) throws -> SandboxConfiguration {
        // The sandbox's own strict reader first: Foundation's decoder lets trailing commas and the like
        // through, and its syntax errors say little about where.
        let tree: JSON
        do {
            tree = try JSON.parse(bytes)
        } catch let error as JSON.ParseError {
            let (line, column) = Self.lineAndColumn(of: error.offset, in: bytes)
            throw ConfigurationError("invalid configuration \(source): not valid JSON at line \(line), column \(column)")
        }
        do {
            return try JSONDecoder().decode(SandboxConfiguration.self, from: Data(bytes))
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
                let unfit = UnfitNumber.find(in: tree, decodes: { candidate in
                    (try? JSONDecoder().decode(SandboxConfiguration.self, from: Data(candidate.serialized.utf8))) != nil
                })
            {
                throw ConfigurationError(
                    "invalid configuration \(source): \(unfit.path): \(unfit.number) must be a whole number of at most 19 digits")
            }
            throw ConfigurationError("invalid configuration \(source): \(Self.describe(error))")
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    static func lineAndColumn(of offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        let before = bytes.prefix(max(0, min(offset, bytes.count)))
        let line = before.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        let column = String(decoding: before[lineStart...], as: UTF8.self).count + 1
        return (line, column)
    }

    /// Applies `APNS_SANDBOX_*` environment overrides.
    public mutating func applyEnvironment(_ environment: [String: String]) throws {
        if let value = environment["APNS_SANDBOX_DATA_DIR"], !value.isEmpty { dataDirectory = value }
        if let value = environment["APNS_SANDBOX_LOG_LEVEL"], !value.isEmpty {
            guard let level = Logger.Level(configurationName: value) else {
                throw ConfigurationError("APNS_SANDBOX_LOG_LEVEL=\(value) must be one of \(Logger.Level.acceptedNames)")
            }
            logLevel = level
        }
        if let value = environment["APNS_SANDBOX_HOST"], !value.isEmpty { setHost(value) }
        if let value = environment["APNS_SANDBOX_TLS_PORT"], !value.isEmpty {
            try setTLSPorts(value, "APNS_SANDBOX_TLS_PORT")
        }
        if let value = environment["APNS_SANDBOX_HTTP_PORT"], !value.isEmpty {
            try setPort(Self.port(value, "APNS_SANDBOX_HTTP_PORT"), tls: false)
        }
        if let value = environment["APNS_SANDBOX_ADMIN_TOKEN"], !value.isEmpty {
            admin.token = value
            admin.tokenFile = nil
        }
        if let value = environment["APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION"], !value.isEmpty {
            // Digits only: Int("+1") and Int("-0") would pass, and a whitespace typo should not.
            guard value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let streams = Int(value), streams <= Int(Int32.max) else {
                throw ConfigurationError(
                    "APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION=\(value) must be a whole number from 0 "
                        + "(0: the full limits.maxConcurrentStreams from the start)")
            }
            apns.streamsBeforeAuthentication = streams
        }
        if let value = environment["APNS_SANDBOX_ADMIN_AUTH"], !value.isEmpty {
            guard let mode = AdminSettings.Authentication(rawValue: value) else {
                throw ConfigurationError("APNS_SANDBOX_ADMIN_AUTH=\(value) must be auto, required or off")
            }
            admin.authentication = mode
        }
        if let value = environment["APNS_SANDBOX_STORAGE"], !value.isEmpty {
            guard let mode = StorageSettings.Mode(rawValue: value) else {
                throw ConfigurationError("APNS_SANDBOX_STORAGE=\(value) must be durable or memory")
            }
            storage.mode = mode
        }
    }

    /// Sets the host of every listener.
    public mutating func setHost(_ host: String) {
        for i in listeners.indices { listeners[i].host = host }
    }

    /// Sets the port of the first TLS (or cleartext) listener, adding one if none exists.
    public mutating func setPort(_ port: Int, tls: Bool) {
        if let i = listeners.firstIndex(where: { $0.tls == tls }) {
            listeners[i].port = port
        } else {
            listeners.append(Listener(name: tls ? "tls" : "cleartext", host: listeners.first?.host ?? "127.0.0.1", port: port, tls: tls))
        }
    }

    /// Sets the TLS ports from `text`, one port or a comma-separated list (`443,2197`: Apple's port and its
    /// alternative, as the container image listens): the first TLS listener takes the first port, and each
    /// further port gets a copy of that listener named `<name>-<port>`.
    public mutating func setTLSPorts(_ text: String, _ name: String) throws {
        let ports = try text.split(separator: ",", omittingEmptySubsequences: false)
            .map { try Self.port($0.trimmingCharacters(in: .whitespaces), name) }
        guard Set(ports).count == ports.count else { throw ConfigurationError("\(name)=\(text) names a port twice") }
        setPort(ports[0], tls: true)
        guard let base = listeners.first(where: { $0.tls }) else { return }
        for port in ports.dropFirst() {
            var extra = base
            extra.name = "\(base.name)-\(port)"
            extra.port = port
            if let existing = listeners.firstIndex(where: { $0.name == extra.name }) {
                listeners[existing] = extra
            } else {
                listeners.append(extra)
            }
        }
    }

    /// Checks values that would otherwise fail later in confusing ways.
    public func validate() throws {
        guard !listeners.isEmpty else { throw ConfigurationError("at least one listener is required") }
        if let duplicate = Dictionary(grouping: listeners, by: \.name).first(where: { $0.value.count > 1 })?.key {
            throw ConfigurationError("listeners: the name \(duplicate) is used twice (names must be unique)")
        }
        if let problem = admin.problems().first { throw ConfigurationError(problem) }
        for (index, listener) in listeners.enumerated() where !(0...65_535).contains(listener.port) {
            throw ConfigurationError("listeners[\(index)].port (listener \(listener.name)): \(listener.port) is not a port (0–65535)")
        }
        if (tls.certificateFile == nil) != (tls.privateKeyFile == nil) {
            throw ConfigurationError("tls.certificateFile and tls.privateKeyFile must be given together")
        }
        if let problem = limits.problem() { throw ConfigurationError(problem) }
        if let problem = webhooks.problems().first { throw ConfigurationError(problem) }
        if let problem = clock.problems().first { throw ConfigurationError(problem) }
        guard events.heartbeatSeconds > 0, events.maxAgeHours > 0 else {
            throw ConfigurationError("events.heartbeatSeconds and events.maxAgeHours must be positive")
        }
        for team in teams {
            for key in team.keys where key.privateKeyFile == nil && key.publicKeyFile == nil {
                throw ConfigurationError("key \(key.keyID): privateKeyFile or publicKeyFile is required")
            }
        }
        if let problem = storage.problems().first { throw ConfigurationError(problem) }
        guard extensions.defaultBudgetMilliseconds > 0, extensions.defaultGraceMilliseconds >= 0,
              extensions.maxConcurrentInstances > 0 else {
            throw ConfigurationError("extensions: budget and maxConcurrentInstances must be positive, grace not negative")
        }
        guard delivery.lowPriorityDelayMilliseconds >= 0, delivery.backgroundPushesPerHour >= 0 else {
            throw ConfigurationError("delivery settings must not be negative")
        }
        _ = try faultRules(now: 0)
    }

    /// The configuration's fault rules, checked, in file order; a rule without an `id` is `config-<n>` (its place
    /// in the list, from 1). `durationSeconds` counts from `now`.
    func faultRules(now: Int64) throws -> [FaultRule] {
        var rules: [FaultRule] = []
        for (index, spec) in faults.enumerated() {
            var spec = spec
            if spec.position != nil { throw ConfigurationError("faults[\(index)].position: is for the API; the file's order is the order") }
            spec.id = spec.id ?? "config-\(index + 1)"
            do {
                rules.append(try spec.rule(now: now, source: .configuration))
            } catch {
                throw ConfigurationError("faults[\(index)].\(error)")
            }
            if rules.dropLast().contains(where: { $0.id == rules.last?.id }) {
                throw ConfigurationError("faults[\(index)].id: \(spec.id ?? "") is used twice")
            }
        }
        return rules
    }

    /// Parses a port number (0 = any free port), naming `name` in the error.
    public static func port(_ text: String, _ name: String) throws -> Int {
        guard let port = Int(text), (0...65_535).contains(port) else {
            throw ConfigurationError("\(name)=\(text) is not a port number")
        }
        return port
    }

    /// A decoding error as a user reads it: the key path as written in the file (`listeners[0].port`) and
    /// the problem, never Swift's own wording (`CodingKeys(stringValue: …)`, `Index 0`).
    static func describe(_ error: DecodingError) -> String {
        func at(_ path: [any CodingKey], _ problem: String) -> String {
            let text = KeyPathText.text(path)
            return text.isEmpty ? problem : "\(text): \(problem)"
        }
        switch error {
        case .keyNotFound(let key, let context):
            return at(context.codingPath + [key], "is required")
        case .valueNotFound(let type, let context):
            return at(context.codingPath, "must be \(Self.typeName(type)), not null")
        case .typeMismatch(let type, let context):
            return at(context.codingPath, "must be \(Self.typeName(type))")
        case .dataCorrupted(let context):
            // Our own errors (unknown keys) read well; Foundation's enum errors name the bad value.
            let detail = context.debugDescription.hasPrefix("Cannot initialize")
                ? "is not one of the accepted values"
                : context.debugDescription
            return at(context.codingPath, detail)
        @unknown default:
            return "\(error)"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Double.Type: "a number"
        case is [Any].Type: "an array"
        default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

/// A configuration problem, reported to the user as is.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
