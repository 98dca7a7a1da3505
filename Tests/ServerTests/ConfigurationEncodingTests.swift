// APNs Sandbox — the configuration encodes as it always did (fingerprints of the file's entries depend on it).
import Crypto
import Foundation
@testable import Server
import Support
import Testing

@Suite struct ConfigurationEncodingTests {
    private static func packageRoot() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    private static func encoded(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private static func digest(_ text: String) -> String {
        Hex.encode(SHA256Digest.hash(Array(text.utf8)))
    }

    /// A file that sets every enum and duration to something other than its default.
    static let everythingSet = #"""
        {"logLevel": "debug",
         "listeners": [{"name": "a", "host": "::1", "port": 1, "tls": false, "environment": "production", "admin": false}],
         "limits": {"idleTimeoutSeconds": 1.5, "requestTimeoutSeconds": 2, "shutdownGraceSeconds": 0.25, "sendTimeoutSeconds": 7},
         "apns": {"defaultEnvironment": "production", "unknownDeviceTokens": "strict", "tokenMaxAgeSeconds": 60,
                  "tokenClockSkewSeconds": 5, "tokenUpdateMinimumIntervalSeconds": 0.5,
                  "environmentKeyReason": "BadEnvironmentKeyInToken"},
         "storage": {"synchronous": "normal", "maxAgeDays": 0.5, "integrityCheck": "full", "integrityCheckSeconds": 0,
                     "onCorruption": "moveAside", "mode": "memory", "memory": {"notifications": 5, "events": 6}},
         "delivery": {"lowPriorityDelayMilliseconds": 250},
         "extensions": {"defaultBudgetMilliseconds": 100, "defaultGraceMilliseconds": 0},
         "events": {"maxAgeHours": 0.1, "heartbeatSeconds": 0.2},
         "webhooks": {"retryScheduleMilliseconds": [0, 10], "timeoutMilliseconds": 3, "breakerCooldownMilliseconds": 4,
                      "deliveryRetentionDays": 1.25},
         "admin": {"authentication": "required"},
         "teams": [{"teamID": "T", "keys": [{"keyID": "K", "publicKeyFile": "k.pem", "scope": "topics", "topics": ["a"],
                                              "environment": "production"}]}],
         "devices": [{"token": "abcd", "environment": "production"}]}
        """#

    /// The defaults, a file that changes every typed setting and the shipped file encode to the bytes they
    /// encoded to before the settings were typed (pinned by digest; re-pinned when a section is added, as
    /// `clock`, `faults`, `dashboard` and `storage.mode` were: the entries' fingerprints do not depend on other sections).
    @Test func encodingIsPinned() throws {
        var shipped = try SandboxConfiguration.load(
            path: Self.packageRoot().appendingPathComponent("config/sandbox.json").path)
        shipped.baseDirectory = nil
        let everything = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(Self.everythingSet.utf8))
        let cases: [(String, SandboxConfiguration, String)] = [
            ("defaults", SandboxConfiguration(), Self.pinnedDefaults),
            ("everything set", everything, Self.pinnedEverythingSet),
            ("config/sandbox.json", shipped, Self.pinnedShipped),
        ]
        for (name, configuration, pinned) in cases {
            let text = try Self.encoded(configuration)
            #expect(Self.digest(text) == pinned, "\(name) encodes differently: \(Self.digest(text)) \(text)")
        }
    }

    /// A device entry's fingerprint (its `configuredAs` in the store) is stable, like an app's
    /// (``ConfigurationPrecedenceTests/fingerprintsArePinned()``).
    @Test func deviceFingerprintIsPinned() throws {
        let configuration = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(Self.everythingSet.utf8))
        let device = try #require(configuration.devices.first)
        let fingerprint = try ConfigurationSeed.fingerprint(device)
        #expect(fingerprint == Self.pinnedDeviceFingerprint, "the fingerprint changed: \(fingerprint)")
        let plain = try JSONDecoder().decode(DeviceConfiguration.self, from: Data(#"{"token":"ab","apps":["x"]}"#.utf8))
        let plainFingerprint = try ConfigurationSeed.fingerprint(plain)
        #expect(plainFingerprint == Self.pinnedPlainDeviceFingerprint, "the fingerprint changed: \(plainFingerprint)")
    }

    static let pinnedDefaults = "47bddabc60b37d09ba669ce49b884151f93d358612534005ebe64271e34fae06"
    static let pinnedEverythingSet = "a717b1d525ad2f6698eb39f6c905ad74b2ea50467fb5860ad83c29e0f9fbfd24"
    static let pinnedShipped = "0ea6219a8f6ab7164fbef5394af17ed131596a9259a9c6682825de6aadd0818c"
    static let pinnedDeviceFingerprint = "0c111a9f342573a86f0cf3fd9cc89b8f3afaeaf0a19a09a495c3a8251378bc8e"
    static let pinnedPlainDeviceFingerprint = "7cc8defa32234afdac6310e7b044a2dd3c99dc471024d6f624ebf810dcbd974b"
}
