// APNs Sandbox — reading the configuration file and its overrides.
import Foundation
import Server
import Testing

@Suite struct ConfigurationTests {
    private func packageRoot() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The shipped example configuration parses and matches the documented defaults.
    @Test func loadsShippedExample() throws {
        let path = packageRoot().appendingPathComponent("config/sandbox.json").path
        let configuration = try SandboxConfiguration.load(path: path)
        #expect(configuration.listeners.map(\.port) == [2197, 8080])
        #expect(configuration.listeners.map(\.tls) == [true, false])
        #expect(configuration.limits.maxConcurrentStreams == 1000)
        #expect(configuration.limits.maxHeaderListSize == 8000)
        #expect(configuration.requestLogging == false)
        // The file lists every limit with its default.
        #expect(configuration.limits == SandboxConfiguration.Limits())
        try configuration.validate()
    }

    /// Every limit is validated, and a bad value is reported with its key.
    @Test(arguments: [
        ("maxConnectionsPerClient", "0"), ("maxOutputBytesPerConnection", "-1"),
        ("maxRequestBodyBytesPerConnection", "1000"), ("maxRequestBodyBytesPerConnection", "2147483648"),
        ("sendTimeoutSeconds", "0"), ("idleTimeoutSeconds", "-5"), ("streamResetBurst", "0"),
        ("streamResetsPerSecond", "-3"), ("discardedDataBurstBytes", "0"), ("discardedDataBytesPerSecond", "0"),
        ("maxEventStreams", "0"), ("maxEventStreamsPerClient", "-1"), ("eventStreamBufferBytes", "1024"),
        ("maxAPIRequestsPerConnection", "0"), ("maxConcurrentStreams", "0"), ("shutdownGraceSeconds", "-1"),
    ])
    func rejectsBadLimitNamingTheKey(key: String, value: String) throws {
        let json = #"{"limits": {"\#(key)": \#(value)}}"#
        let configuration = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(json.utf8))
        do {
            try configuration.validate()
            Issue.record("limits.\(key) = \(value): expected an error")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("limits.\(key)"), "\(error)")
        }
    }

    /// The new limits decode from the file by name.
    @Test func decodesTheResourceLimits() throws {
        let json = #"{"limits": {"maxConnectionsPerClient": 7, "sendTimeoutSeconds": 2.5, "maxEventStreamsPerClient": 3,"#
            + #" "streamResetBurst": 50, "discardedDataBytesPerSecond": 1000, "maxAPIRequestsPerConnection": 2}}"#
        let limits = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(json.utf8)).limits
        #expect(limits.maxConnectionsPerClient == 7)
        #expect(limits.sendTimeoutSeconds == 2.5)
        #expect(limits.maxEventStreamsPerClient == 3)
        #expect(limits.streamResetBurst == 50)
        #expect(limits.discardedDataBytesPerSecond == 1000)
        #expect(limits.maxAPIRequestsPerConnection == 2)
        #expect(limits.maxOutputBytesPerConnection == SandboxConfiguration.Limits().maxOutputBytesPerConnection)
    }

    /// Missing keys fall back to defaults, so `{}` is a valid configuration.
    @Test func emptyObjectMeansDefaults() throws {
        let configuration = try JSONDecoder().decode(SandboxConfiguration.self, from: Data("{}".utf8))
        #expect(configuration == SandboxConfiguration())
    }

    /// Environment variables override the file; bad values are reported by name.
    @Test func appliesEnvironmentOverrides() throws {
        var configuration = SandboxConfiguration()
        try configuration.applyEnvironment([
            "APNS_SANDBOX_TLS_PORT": "12197", "APNS_SANDBOX_HTTP_PORT": "18080",
            "APNS_SANDBOX_DATA_DIR": "/tmp/x", "APNS_SANDBOX_HOST": "127.0.0.1",
        ])
        #expect(configuration.listeners.first { $0.tls }?.port == 12197)
        #expect(configuration.listeners.first { !$0.tls }?.port == 18080)
        #expect(configuration.listeners.allSatisfy { $0.host == "127.0.0.1" })
        #expect(configuration.dataDirectory == "/tmp/x")
        #expect(throws: ConfigurationError.self) {
            try configuration.applyEnvironment(["APNS_SANDBOX_HTTP_PORT": "eighty"])
        }
    }

    /// A type error names the offending key.
    @Test func reportsTheBadKey() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        try Data(#"{"limits": {"maxBodyBytes": "big"}}"#.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        do {
            _ = try SandboxConfiguration.load(path: url.path)
            Issue.record("expected an error")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("limits.maxBodyBytes"))
        }
    }

    /// Half a user certificate (file without key) is rejected up front.
    @Test func rejectsCertificateWithoutKey() {
        var configuration = SandboxConfiguration()
        configuration.tls.certificateFile = "/tmp/cert.pem"
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
    }
}
