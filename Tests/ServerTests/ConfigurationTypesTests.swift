// APNs Sandbox — typed configuration: closed sets of names as enums, durations in the unit their key names.
import APNsProtocol
import Foundation
import Sandbox
@testable import Server
import Store
import Support
import Testing

@Suite struct ConfigurationTypesTests {
    private static func load(_ text: String) throws -> SandboxConfiguration {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("typed-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try SandboxConfiguration.load(path: url.path)
    }

    /// A name that is not one of a setting's is refused when the file is read, with the key path as written,
    /// the accepted names and the name given.
    @Test(arguments: [
        (#"{"logLevel":"verbose"}"#,
         #"logLevel: is not one of the accepted values: trace, debug, info, notice, warning, error (got "verbose")"#),
        (#"{"listeners":[{"name":"a","host":"::","port":1,"tls":false,"environment":"staging"}]}"#,
         #"listeners[0].environment: is not one of the accepted values: development, production (got "staging")"#),
        (#"{"apns":{"defaultEnvironment":"sandbox"}}"#,
         #"apns.defaultEnvironment: is not one of the accepted values: development, production (got "sandbox")"#),
        (#"{"apns":{"unknownDeviceTokens":"strictly"}}"#,
         #"apns.unknownDeviceTokens: is not one of the accepted values: autoRegister, strict (got "strictly")"#),
        (#"{"apns":{"environmentKeyReason":"BadEnvironment"}}"#,
         #"apns.environmentKeyReason: is not one of the accepted values: BadEnvironmentKeyIdInToken, BadEnvironmentKeyInToken (got "BadEnvironment")"#),
        (#"{"storage":{"synchronous":"FULL"}}"#,
         #"storage.synchronous: is not one of the accepted values: full, normal (got "FULL")"#),
        (#"{"storage":{"integrityCheck":"fast"}}"#,
         #"storage.integrityCheck: is not one of the accepted values: quick, full, off (got "fast")"#),
        (#"{"storage":{"onCorruption":"delete"}}"#,
         #"storage.onCorruption: is not one of the accepted values: refuse, moveAside (got "delete")"#),
        (#"{"admin":{"authentication":"sometimes"}}"#,
         #"admin.authentication: is not one of the accepted values: auto, required, off (got "sometimes")"#),
        (#"{"teams":[{"teamID":"T","keys":[{"keyID":"K","publicKeyFile":"k","scope":"app"}]}]}"#,
         #"teams[0].keys[0].scope: is not one of the accepted values: team, topics (got "app")"#),
        (#"{"teams":[{"teamID":"T","keys":[{"keyID":"K","publicKeyFile":"k","environment":"all"}]}]}"#,
         #"teams[0].keys[0].environment: is not one of the accepted values: development, production, both (got "all")"#),
        (#"{"devices":[{"token":"abcd","environment":"prod"}]}"#,
         #"devices[0].environment: is not one of the accepted values: development, production (got "prod")"#),
        (#"{"storage":{"onCorruption":7}}"#, "storage.onCorruption: must be a string"),
    ])
    func unknownNamesAreRefusedWithTheAcceptedOnes(text: String, expected: String) throws {
        let error = try #require(throws: ConfigurationError.self) { try Self.load(text) }
        #expect(error.description.hasPrefix("invalid configuration "), "\(error)")
        #expect(error.description.hasSuffix(": " + expected), "\(error)")
    }

    /// Names decode into the enums of the modules that use them (no string is parsed again later).
    @Test func namesDecodeIntoTheirCases() throws {
        let configuration = try JSONDecoder().decode(
            SandboxConfiguration.self, from: Data(ConfigurationEncodingTests.everythingSet.utf8))
        #expect(configuration.logLevel == .debug)
        #expect(configuration.listeners[0].environment == .production)
        #expect(configuration.apns.defaultEnvironment == .production)
        #expect(configuration.apns.unknownDeviceTokens == .strict)
        #expect(configuration.apns.environmentKeyReason.reason == .badEnvironmentKeyInToken)
        #expect(configuration.storage.synchronous.sqlite == .normal)
        #expect(configuration.storage.integrity == IntegrityCheck(mode: .full, timeLimitSeconds: nil))
        #expect(configuration.storage.onCorruption == .moveAside)
        #expect(configuration.admin.authentication == .required)
        let key = try #require(configuration.teams.first?.keys.first)
        #expect(key.scope == .topics && key.environment.apnsEnvironment == .production)
        #expect(TeamConfiguration.Key.Environment.both.apnsEnvironment == nil)
        #expect(configuration.devices[0].environment == .production)
        #expect(SandboxConfiguration().storage.synchronous.sqlite == .full)
    }

    /// `logLevel` takes what `--log-level` always took: any letter case, and `warn`.
    @Test func logLevelNamesAreTheFlagsOnes() throws {
        for (name, level) in [("WARN", Logger.Level.warning), ("warn", .warning), ("Debug", .debug), ("error", .error)] {
            #expect(try Self.load(#"{"logLevel":"\#(name)"}"#).logLevel == level, "\(name)")
        }
    }

    /// `APNS_SANDBOX_LOG_LEVEL` sets `logLevel`; a name that is none of the levels is an error naming the variable.
    @Test func logLevelFromTheEnvironment() throws {
        var configuration = SandboxConfiguration()
        try configuration.applyEnvironment(["APNS_SANDBOX_LOG_LEVEL": "trace"])
        #expect(configuration.logLevel == .trace)
        let error = try #require(throws: ConfigurationError.self) {
            try configuration.applyEnvironment(["APNS_SANDBOX_LOG_LEVEL": "loud"])
        }
        #expect(error.description
            == "APNS_SANDBOX_LOG_LEVEL=loud must be one of trace, debug, info, notice, warning, error")
        #expect(configuration.logLevel == .trace)
    }
}
