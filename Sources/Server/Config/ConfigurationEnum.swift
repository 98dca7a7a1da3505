// APNs Sandbox — closed sets of names in the configuration, decoded into enums.
import APNsProtocol
import Sandbox
import Store
import Support

/// A setting that takes one of a fixed set of names (`"strict"`, `"moveAside"`): decoded straight into
/// the enum by ``ConfigSection``, so that use sites switch over cases and never compare strings. A name
/// not in the set is an error listing the accepted ones:
/// `storage.onCorruption: is not one of the accepted values: refuse, moveAside (got "delete")`.
///
/// Encoding (`Codable`) writes ``configurationName``, as the file has it.
protocol ConfigurationEnum: CaseIterable, Codable, Sendable {
    /// The name as the configuration file writes it.
    var configurationName: String { get }
    /// The case the file's `name` stands for; nil when it is none of them.
    init?(configurationName name: String)
}

extension ConfigurationEnum {
    init?(configurationName name: String) {
        guard let match = Self.allCases.first(where: { $0.configurationName == name }) else { return nil }
        self = match
    }

    /// The accepted names, in declaration order: `refuse, moveAside`.
    static var acceptedNames: String {
        allCases.map(\.configurationName).joined(separator: ", ")
    }

    /// The problem with `name` as ``SandboxConfiguration/describe(_:)`` shows it after the key path.
    static func notOneOf(_ name: String) -> String {
        "is not one of the accepted values: \(acceptedNames) (got \(JSONString.quoted(name)))"
    }
}

extension ConfigurationEnum where Self: RawRepresentable, RawValue == String {
    var configurationName: String { rawValue }
}

// Enums of the modules below that the configuration names as they are.

extension APNsEnvironment: ConfigurationEnum {}
extension DeviceRegistry.UnknownTokenPolicy: ConfigurationEnum {}
extension IntegrityCheck.Mode: ConfigurationEnum {}

/// `logLevel`: the names of ``Logger/Level/init(name:)``, which also takes `warn` and any letter case
/// (as `--log-level` and `APNS_SANDBOX_LOG_LEVEL` always did).
extension Logger.Level: ConfigurationEnum {
    var configurationName: String { description }

    init?(configurationName name: String) {
        self.init(name: name)
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let level = Self(name: name) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: Self.notOneOf(name)))
        }
        self = level
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
