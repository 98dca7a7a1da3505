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

    /// Durations keep their keys and units; use sites get nanoseconds or milliseconds without multiplying.
    @Test func durationsConvertFromTheirKeysUnit() throws {
        let configuration = try JSONDecoder().decode(
            SandboxConfiguration.self, from: Data(ConfigurationEncodingTests.everythingSet.utf8))
        #expect(configuration.limits.idleTimeoutSeconds == 1.5)
        #expect(configuration.limits.idleTimeoutSeconds.nanoseconds == 1_500_000_000)
        #expect(configuration.limits.shutdownGraceSeconds.milliseconds == 250)
        #expect(configuration.limits.sendTimeoutSeconds.duration == .seconds(7))
        #expect(configuration.storage.maxAgeDays.milliseconds == 43_200_000)
        #expect(configuration.events.maxAgeHours.milliseconds == 360_000)
        #expect(configuration.events.heartbeatSeconds.nanoseconds == 200_000_000)
        #expect(configuration.delivery.lowPriorityDelayMilliseconds.nanoseconds == 250_000_000)
        #expect(configuration.apns.tokenMaxAgeSeconds.milliseconds == 60_000)
        #expect(configuration.webhooks.settings.retryScheduleMilliseconds == [0, 10])
        #expect(configuration.webhooks.settings.deliveryRetentionMilliseconds == 108_000_000)
        #expect(WebhookConfiguration().deliveryRetentionDays == 7)
        let options = SandboxServer.httpOptions(from: configuration)
        #expect(options.idleTimeout == 1_500_000_000 && options.requestTimeout == 2_000_000_000)
        #expect(options.sendTimeout == 7_000_000_000)
        // The floor the HTTP options keep (10 ms), as before.
        var tiny = SandboxConfiguration()
        tiny.limits.idleTimeoutSeconds = 0.001
        #expect(SandboxServer.httpOptions(from: tiny).idleTimeout == 10_000_000)
    }

    /// The conversions are the sandbox's old arithmetic (`UInt64(max(0, s) * 1e9)`, `Int64(d * 86_400_000)`),
    /// truncating; a negative duration is 0 ns; an absurd one saturates instead of trapping.
    @Test func conversionsTruncateAndSaturate() {
        for seconds in [0.0, 0.2, 0.3, 1.5, 2.25, 10, 1e-9, 1234.5678, -3] {
            #expect(ConfigDuration<InSeconds>(seconds).nanoseconds == UInt64(max(0, seconds) * 1e9), "\(seconds)")
        }
        for days in [0.0, 0.1, 0.5, 1.25, 30, 365.25] {
            #expect(ConfigDuration<InDays>(days).milliseconds == Int64(days * 86_400_000), "\(days)")
        }
        #expect(ConfigDuration<InSeconds>(-1).milliseconds == -1000)
        #expect(ConfigDuration<InDays>(1e300).milliseconds == .max)
        #expect(ConfigDuration<InDays>(-1e300).milliseconds == .min)
        #expect(ConfigDuration<InSeconds>(.infinity).nanoseconds == UInt64(Int64.max))
        #expect(ConfigDuration<InMilliseconds>(.max).nanoseconds == UInt64(Int64.max))
        #expect(ConfigDuration<InMilliseconds>(.min).milliseconds == .min)
    }

    /// A duration of the wrong kind is named with its key: a fraction where whole milliseconds belong, text
    /// where a number does; range problems are still found by `validate()`, with the same messages.
    @Test(arguments: [
        (#"{"delivery":{"lowPriorityDelayMilliseconds":1.5}}"#, "delivery.lowPriorityDelayMilliseconds: 1.5 must be a whole number"),
        (#"{"webhooks":{"retryScheduleMilliseconds":[0,2.5]}}"#, "webhooks.retryScheduleMilliseconds[1]: 2.5 must be a whole number"),
        (#"{"limits":{"idleTimeoutSeconds":"long"}}"#, "limits.idleTimeoutSeconds: must be a number"),
        (#"{"apns":{"tokenMaxAgeSeconds":"1h"}}"#, "apns.tokenMaxAgeSeconds: must be an integer"),
    ])
    func durationsOfTheWrongKindNameTheKey(text: String, expected: String) throws {
        let error = try #require(throws: ConfigurationError.self) { try Self.load(text) }
        #expect(error.description.contains(expected), "\(error)")
    }

    /// Range checks on durations keep their messages.
    @Test func durationRangesAreChecked() throws {
        let cases: [(String, String)] = [
            (#"{"limits":{"idleTimeoutSeconds":-5}}"#, "limits.idleTimeoutSeconds must be a positive number (got -5.0)"),
            (#"{"limits":{"shutdownGraceSeconds":-1}}"#, "limits.shutdownGraceSeconds must not be negative (got -1.0)"),
            (#"{"events":{"heartbeatSeconds":0}}"#, "events.heartbeatSeconds and events.maxAgeHours must be positive"),
            (#"{"delivery":{"lowPriorityDelayMilliseconds":-1}}"#, "delivery settings must not be negative"),
            (#"{"webhooks":{"retryScheduleMilliseconds":[0,-1]}}"#, "webhooks.retryScheduleMilliseconds must list at least one delay, none negative"),
            (#"{"webhooks":{"timeoutMilliseconds":0}}"#, "webhooks.timeoutMilliseconds must be positive"),
            (#"{"extensions":{"defaultGraceMilliseconds":-1}}"#, "extensions: budget and maxConcurrentInstances must be positive, grace not negative"),
            (#"{"storage":{"maxAgeDays":0}}"#, "storage.maxRecords and storage.maxAgeDays must be positive, storage.file non-empty"),
        ]
        for (text, expected) in cases {
            let configuration = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(text.utf8))
            let error = try #require(throws: ConfigurationError.self) { try configuration.validate() }
            #expect(error.description == expected, "\(text)")
        }
    }
}
