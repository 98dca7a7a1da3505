// APNs Sandbox — the storage settings of issue #11: integrity check, recovery, size limit.
import Foundation
@testable import Server
import Store
import Testing

@Suite struct StorageSettingsTests {
    private func decode(_ storage: String) throws -> SandboxConfiguration {
        try JSONDecoder().decode(SandboxConfiguration.self, from: Data(#"{"storage": {\#(storage)}}"#.utf8))
    }

    /// The defaults are the documented ones, and the shipped config/sandbox.json states each of them.
    @Test func defaultsAreDocumentedAndShipped() throws {
        let defaults = StorageSettings()
        #expect(defaults.integrityCheck == .quick)
        #expect(defaults.integrityCheckSeconds == 10)
        #expect(defaults.onCorruption == .refuse)
        #expect(defaults.maxSizeMB == 0)
        #expect(defaults.integrity == IntegrityCheck(mode: .quick, timeLimitSeconds: 10))
        #expect(defaults.maxSizeBytes == 0)

        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let shipped = try Data(contentsOf: root.appendingPathComponent("config/sandbox.json"))
        let storage = try #require((try JSONSerialization.jsonObject(with: shipped) as? [String: Any])?["storage"] as? [String: Any])
        #expect(defaults.mode == .durable)
        #expect(defaults.memory.notifications == 10_000 && defaults.memory.events == 50_000)
        for key in ["integrityCheck", "integrityCheckSeconds", "onCorruption", "maxSizeMB", "mode", "memory"] {
            #expect(storage[key] != nil, "config/sandbox.json lists storage.\(key)")
        }
        #expect(try SandboxConfiguration.load(path: root.appendingPathComponent("config/sandbox.json").path).storage == defaults)
    }

    /// Values are read and mapped: 0 seconds is no limit, MiB become bytes.
    @Test func readsTheNewKeys() throws {
        let configuration = try decode(#""integrityCheck": "full", "integrityCheckSeconds": 0, "onCorruption": "moveAside", "maxSizeMB": 1.5"#)
        try configuration.validate()
        #expect(configuration.storage.integrity == IntegrityCheck(mode: .full, timeLimitSeconds: nil))
        #expect(configuration.storage.onCorruption == .moveAside)
        #expect(configuration.storage.maxSizeBytes == 1_572_864)
        #expect(try decode(#""integrityCheck": "off""#).storage.integrity.mode == .off)
    }

    /// Each bad value is an error that names its key: a name that is none of the setting's when the file is
    /// read, a number out of range when the configuration is checked.
    @Test(arguments: [
        (#""integrityCheck": "fast""#, "storage.integrityCheck"),
        (#""integrityCheckSeconds": -1"#, "storage.integrityCheckSeconds"),
        (#""onCorruption": "delete""#, "storage.onCorruption"),
        (#""maxSizeMB": -5"#, "storage.maxSizeMB"),
        (#""mode": "ram""#, "storage.mode"),
        (#""memory": {"notifications": 0}"#, "storage.memory.notifications"),
        (#""memory": {"events": -1}"#, "storage.memory.events"),
        (#""memory": {"notificationz": 5}"#, "storage.memory.notificationz"),
    ])
    func rejectsBadValuesByName(storage: String, key: String) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID().uuidString).json")
        try Data(#"{"storage": {\#(storage)}}"#.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = try #require(throws: ConfigurationError.self) { try SandboxConfiguration.load(path: url.path).validate() }
        #expect(error.description.contains(key), "\(error)")
    }

    /// The memory mode's settings, from the file and from `APNS_SANDBOX_STORAGE` (the image's switch).
    @Test func readsTheMemoryMode() throws {
        var configuration = try decode(#""mode": "memory", "memory": {"notifications": 500, "events": 2000}"#)
        try configuration.validate()
        #expect(configuration.storage.mode == .memory)
        #expect(configuration.storage.memory.notifications == 500 && configuration.storage.memory.events == 2000)
        var durable = SandboxConfiguration()
        try durable.applyEnvironment(["APNS_SANDBOX_STORAGE": "memory"])
        #expect(durable.storage.mode == .memory)
        let error = try #require(throws: ConfigurationError.self) { try configuration.applyEnvironment(["APNS_SANDBOX_STORAGE": "disk"]) }
        #expect(error.description.contains("APNS_SANDBOX_STORAGE"), "\(error)")
    }

    /// A value of the wrong type is reported with its key when the file is read.
    @Test func wrongTypeNamesTheKey() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID().uuidString).json")
        try Data(#"{"storage": {"maxSizeMB": "big"}}"#.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = try #require(throws: ConfigurationError.self) { try SandboxConfiguration.load(path: url.path) }
        #expect(error.description.contains("storage.maxSizeMB"), "\(error)")
    }
}
