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
        for key in ["integrityCheck", "integrityCheckSeconds", "onCorruption", "maxSizeMB"] {
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
    ])
    func rejectsBadValuesByName(storage: String, key: String) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID().uuidString).json")
        try Data(#"{"storage": {\#(storage)}}"#.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = try #require(throws: ConfigurationError.self) { try SandboxConfiguration.load(path: url.path).validate() }
        #expect(error.description.contains(key), "\(error)")
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
