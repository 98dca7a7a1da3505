// APNs Sandbox — reading one section of the configuration file: unknown keys refused, defaults from one place.

/// Reads one section (JSON object) of the configuration into `Settings`, for its `init(from:)`:
///
/// ```swift
/// let section = try ConfigSection(decoder, defaults: Self())
/// maxEvents = try section(.maxEvents, \.maxEvents)
/// ```
///
/// - A key the section does not list in `Keys` is an error naming its path
///   (``StrictlyKeyed/rejectUnknownKeys(in:)``).
/// - A missing key, or `null`, keeps the value of `defaults`: each settings type states its defaults once,
///   in its properties (or its memberwise init), and decoding never repeats them.
/// - A ``ConfigurationEnum`` is read as its name; another name is an error that lists the accepted ones.
/// - Errors are `DecodingError`s with the key path; ``SandboxConfiguration/describe(_:)`` words them.
struct ConfigSection<Settings: StrictlyKeyed> {
    private let container: KeyedDecodingContainer<Settings.Keys>
    private let defaults: Settings

    /// - Parameter defaults: the value of every key the section does not give (for a type with required
    ///   keys, an instance whose required properties are placeholders: they are read with ``required(_:)``).
    init(_ decoder: any Decoder, defaults: Settings) throws {
        try Settings.rejectUnknownKeys(in: decoder)
        container = try decoder.container(keyedBy: Settings.Keys.self)
        self.defaults = defaults
    }

    /// The value of `key`, or the default's `property` when the key is absent or `null`.
    func callAsFunction<Value: Decodable>(_ key: Settings.Keys, _ property: KeyPath<Settings, Value>) throws -> Value {
        try container.decodeIfPresent(Value.self, forKey: key) ?? defaults[keyPath: property]
    }

    /// The case `key` names, or the default's `property` when the key is absent or `null`.
    func callAsFunction<Value: ConfigurationEnum>(_ key: Settings.Keys, _ property: KeyPath<Settings, Value>) throws -> Value {
        try self.case(Value.self, key) ?? defaults[keyPath: property]
    }

    /// The case `key` names, or the default's `property` (often nil) when the key is absent or `null`.
    func callAsFunction<Value: ConfigurationEnum>(_ key: Settings.Keys, _ property: KeyPath<Settings, Value?>) throws -> Value? {
        try self.case(Value.self, key) ?? defaults[keyPath: property]
    }

    /// The value of a key that has no default (`listeners[].name`): its absence is an error (`is required`).
    func required<Value: Decodable>(_ key: Settings.Keys) throws -> Value {
        try container.decode(Value.self, forKey: key)
    }

    private func `case`<Value: ConfigurationEnum>(_ type: Value.Type, _ key: Settings.Keys) throws -> Value? {
        guard let name = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let value = Value(configurationName: name) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: Value.notOneOf(name))
        }
        return value
    }
}
