// APNs Sandbox — the steps a builtin service extension runs.
import APNsProtocol

/// One step of a builtin extension (issue #5, "Extension kinds").
///
/// | step | what it does |
/// |---|---|
/// | `decrypt` | AES-256-GCM-opens the base64 payload field `field` (default `encrypted_data`: nonce, ciphertext, tag) with the app's key from the device keychain (`DeviceRecord.keys[bundleId]`, base64). The plaintext JSON object sets `title`, `subtitle`, `body` (or an `aps.alert` inside it), `badge` and `sound`; its other members, and the members of a `userInfo` object in it, are merged into `userInfo`. Critical by default: failing shows the original (`original-error`), as Apple's guidance says. |
/// | `localize` | Resolves `title-loc-key`/`subtitle-loc-key`/`loc-key` (with their `*-loc-args`) found in `userInfo` (e.g. from a decrypted plaintext), and any title, subtitle or body that is itself a key of the app's strings, for the device locale. |
/// | `attach-media` | Downloads the http(s) URL in the first of `fields` (default `media-url`, `media_url`) present in `userInfo` into the instance's temp directory and attaches it as `identifier` (default `media`). Failure (no server, 404, timeout, wrong type, too large) continues without media. |
/// | `rewrite` | Replaces `title`, `subtitle`, `body` with templates over `{{title}}`, `{{subtitle}}`, `{{body}}` and `{{userInfo.a.b}}`. |
/// | `simulate` | Waits `delayMs`, then behaves as `behavior` says (``SimulatedBehavior``). |
///
/// Every step may set `critical` (a failure ends the instance with `original-error`) and `timeoutMs` (a step
/// still running then has failed). Defaults: decrypt 5 s, localize 1 s, attach-media 10 s, rewrite 1 s,
/// simulate none (it is bounded by the budget alone).
public struct BuiltinStep: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case decrypt(field: String)
        case localize
        case attachMedia(fields: [String], identifier: String)
        case rewrite(title: String?, subtitle: String?, body: String?)
        case simulate(delayMilliseconds: Int64, behavior: SimulatedBehavior?)

        /// The step's name as configured.
        public var name: String {
            switch self {
            case .decrypt: "decrypt"
            case .localize: "localize"
            case .attachMedia: "attach-media"
            case .rewrite: "rewrite"
            case .simulate: "simulate"
            }
        }
    }

    public var action: Action
    public var isCritical: Bool
    /// The step's own limit inside the budget; nil = only the budget.
    public var timeoutMilliseconds: Int64?

    public init(_ action: Action, isCritical: Bool? = nil, timeoutMilliseconds: Int64? = nil) {
        self.action = action
        self.isCritical = isCritical ?? Self.defaultCritical(action)
        self.timeoutMilliseconds = timeoutMilliseconds ?? Self.defaultTimeout(action)
    }

    static func defaultCritical(_ action: Action) -> Bool {
        if case .decrypt = action { return true }
        return false
    }

    static func defaultTimeout(_ action: Action) -> Int64? {
        switch action {
        case .decrypt: 5_000
        case .localize, .rewrite: 1_000
        case .attachMedia: 10_000
        case .simulate: nil
        }
    }

    init(_ value: JSON, path: String) throws {
        let object = try ConfigObject(value, path: path)
        let name = try object.requiredString("step")
        let common = ["step", "critical", "timeoutMs", "comment"]
        let action: Action
        switch name {
        case "decrypt":
            try object.rejectUnknownKeys(allowed: common + ["field"])
            let field = try object.string("field") ?? "encrypted_data"
            guard !field.isEmpty else { throw ExtensionConfigurationError(object.keyPath("field"), "must not be empty") }
            action = .decrypt(field: field)
        case "localize":
            try object.rejectUnknownKeys(allowed: common)
            action = .localize
        case "attach-media":
            try object.rejectUnknownKeys(allowed: common + ["fields", "identifier"])
            let fields = try (object.array("fields") ?? [.string("media-url"), .string("media_url")])
                .enumerated().map { index, value in
                    guard let text = value.string, !text.isEmpty else {
                        throw ExtensionConfigurationError(object.keyPath("fields[\(index)]"), "must be a non-empty string")
                    }
                    return text
                }
            guard !fields.isEmpty else { throw ExtensionConfigurationError(object.keyPath("fields"), "must not be empty") }
            let identifier = try object.string("identifier") ?? "media"
            action = .attachMedia(fields: fields, identifier: identifier)
        case "rewrite":
            try object.rejectUnknownKeys(allowed: common + ["title", "subtitle", "body"])
            action = .rewrite(title: try object.string("title"), subtitle: try object.string("subtitle"),
                              body: try object.string("body"))
        case "simulate":
            try object.rejectUnknownKeys(allowed: common + ["delayMs", "behavior"])
            let delay = try object.milliseconds("delayMs", range: 0...ExtensionConfiguration.maxBudgetMilliseconds) ?? 0
            var behavior: SimulatedBehavior?
            if let text = try object.string("behavior") {
                guard let known = SimulatedBehavior(rawValue: text) else {
                    throw ExtensionConfigurationError(
                        object.keyPath("behavior"),
                        "must be one of \(SimulatedBehavior.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text)\"")
                }
                behavior = known
            }
            action = .simulate(delayMilliseconds: delay, behavior: behavior)
        default:
            throw ExtensionConfigurationError(
                object.keyPath("step"),
                "must be one of decrypt, localize, attach-media, rewrite, simulate, not \"\(name)\"")
        }
        self.init(action, isCritical: try object.bool("critical"),
                  timeoutMilliseconds: try object.milliseconds("timeoutMs", range: 1...ExtensionConfiguration.maxBudgetMilliseconds))
    }
}

/// What a `simulate` step makes the extension do, to exercise a backend's fallbacks.
public enum SimulatedBehavior: String, Sendable, Equatable, CaseIterable {
    /// The step never finishes and the extension stops answering, `timeWillExpire` included:
    /// `original-timeout` at budget + grace.
    case hang
    /// The extension crashes: `original-crash` at once.
    case crash
    /// The extension goes over its memory limit and is killed (like jetsam, no `timeWillExpire`): `original-crash`.
    case exceedMemory = "exceed-memory"
    /// The steps finish but the content handler is never called, not even in `timeWillExpire`: `original-timeout`.
    case neverCall = "never-call"
    /// The extension fails: `original-error`.
    case error
    /// The handler is called twice: the first content is shown (`processed`), the second ignored and noted.
    case callTwice = "call-twice"
    /// The content handed over has no title, subtitle or body: `original-no-alert`.
    case removeAlert = "remove-alert"
    /// The steps finish, but the handler is called only in `timeWillExpire`: `best-attempt`.
    case callInExpire = "call-in-expire"
}
