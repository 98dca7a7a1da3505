// APNs Sandbox — reading the configuration file and its overrides.
import Foundation
@testable import Server
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

    /// `APNS_SANDBOX_TLS_PORT=443,2197` (the container image's): the TLS listener on 443 and a copy on 2197;
    /// applying it again changes nothing; a bad or repeated port is named.
    @Test func tlsPortListAddsListeners() throws {
        var configuration = SandboxConfiguration()
        try configuration.applyEnvironment(["APNS_SANDBOX_HOST": "::", "APNS_SANDBOX_TLS_PORT": "443,2197"])
        try configuration.applyEnvironment(["APNS_SANDBOX_TLS_PORT": "443, 2197"])
        let tls = configuration.listeners.filter(\.tls)
        #expect(tls.map(\.port) == [443, 2197])
        #expect(tls.map(\.name) == ["tls", "tls-2197"])
        #expect(tls.allSatisfy { $0.host == "::" && $0.admin == tls[0].admin })
        try configuration.validate()
        for bad in ["443,", "443,443", "443,x"] {
            #expect(throws: ConfigurationError.self) {
                var copy = SandboxConfiguration()
                try copy.applyEnvironment(["APNS_SANDBOX_TLS_PORT": bad])
            }
        }
        do {
            var copy = SandboxConfiguration()
            try copy.applyEnvironment(["APNS_SANDBOX_TLS_PORT": "443,443"])
        } catch let error as ConfigurationError {
            #expect("\(error)".contains("APNS_SANDBOX_TLS_PORT"))
        }
    }

    /// `APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION` sets `apns.streamsBeforeAuthentication` (the load-tool
    /// one-liner); anything but a whole number from 0 up is an error naming the variable.
    @Test func streamsBeforeAuthenticationFromTheEnvironment() throws {
        var configuration = SandboxConfiguration()
        #expect(configuration.apns.streamsBeforeAuthentication == 1)
        try configuration.applyEnvironment(["APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION": "0"])
        #expect(configuration.apns.streamsBeforeAuthentication == 0)
        try configuration.applyEnvironment(["APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION": "5"])
        #expect(configuration.apns.streamsBeforeAuthentication == 5)
        for bad in ["-1", "one", "1.5", " 0"] {
            let error = #expect(throws: ConfigurationError.self) {
                try configuration.applyEnvironment(["APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION": bad])
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION"), "\(bad)")
        }
        #expect(configuration.apns.streamsBeforeAuthentication == 5)
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

    /// `--config my.json` (a bare file name) takes the file's relative key paths from the working directory,
    /// as `./my.json` does, not from `/`.
    @Test func bareConfigFileNameResolvesRelativePaths() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("config")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: packageRoot().path + "/config/keys/AuthKey_DEMOKEY123.p8", toPath: directory + "/keys/AuthKey_K.p8")
        try #"{"teams":[{"teamID":"TEAM000001","keys":[{"keyID":"K","privateKeyFile":"keys/AuthKey_K.p8"}],"apps":[]}]}"#
            .write(toFile: directory + "/my.json", atomically: true, encoding: .utf8)
        for name in ["my.json", "./my.json"] {
            let output = try await run("/bin/sh", args: ["-c", "cd '\(directory)' && exec '\(binary)' token --config \(name)"])
            #expect(output.status == 0, "\(name): \(output)")
            #expect(output.stdoutText.split(separator: ".").count == 3, "\(name): \(output)")
        }
    }

    /// Every mistake in the file is an error naming the file, the key path as written and the problem, with
    /// line and column for JSON that is not valid; never Swift's own wording.
    @Test(arguments: [
        ("{\n  \"logLevel\": \"info\",\n  \"limits\": {\"maxConnections\": 5,}\n}\n", "line 3, column 34"),
        (#"{"logLevl":"debug"}"#, "logLevl: unknown key"),
        (#"{"storage":{"synchronus":"normal"}}"#, "storage.synchronus: unknown key"),
        (#"{"limits":{"maxConection":1}}"#, "limits.maxConection: unknown key"),
        (#"{"listeners":[{"name":"a","host":"::","port":1,"tls":false},{"host":"::","port":2,"tls":false}]}"#,
         "listeners[1].name: is required"),
        (#"{"listeners":[{"name":"a","host":"::","port":"80","tls":false}]}"#, "listeners[0].port: must be an integer"),
        (#"{"teams":[{"teamID":"T","keys":[{"keyID":"K","scop":"team"}]}]}"#, "teams[0].keys[0].scop: unknown key"),
        (#"{"webhooks":{"subscriptions":[{"id":"a","url":"http://x","evnts":[]}]}}"#, "webhooks.subscriptions[0].evnts: unknown key"),
        (#"{"apps":[{"bundleID":"a","teamID":"T","serviceExtensions":{}}]}"#, "apps[0].serviceExtensions: unknown key"),
        (#"{"devices":[{"token":"ab","local":"fr"}]}"#, "devices[0].local: unknown key"),
        (#"{"tls":{"extraName":[]}}"#, "tls.extraName: unknown key"),
        (#"{"events":{"maxEvent":1}}"#, "events.maxEvent: unknown key"),
        (#"{"delivery":{"lowPriorityDelay":1}}"#, "delivery.lowPriorityDelay: unknown key"),
        (#"{"apns":{"unknownDeviceToken":"strict"}}"#, "apns.unknownDeviceToken: unknown key"),
        (#"{"logLevel":5}"#, "logLevel: must be a string"),
        (#"{"limits":{"maxConnections":3.5}}"#, "limits.maxConnections: 3.5 must be a whole number"),
        (#"{"listeners":[{"name":"a","host":"::","port":1e30,"tls":false}]}"#, "listeners[0].port: 1e30 must be a whole number"),
        (#"{"admin":{"authentication":"sometimes"}}"#, "admin.authentication: is not one of the accepted values"),
    ])
    func configurationErrorsNameTheKey(text: String, expected: String) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        do {
            _ = try SandboxConfiguration.load(path: url.path)
            Issue.record("expected an error for \(text)")
        } catch let error as ConfigurationError {
            #expect(error.description.contains(url.path), "\(error)")
            #expect(error.description.contains(expected), "\(error)")
            for swiftism in ["CodingKeys", "Index ", "stringValue", "intValue"] {
                #expect(!error.description.contains(swiftism), "\(error)")
            }
        }
    }

    /// Each section's list of known keys is exactly its properties, so no key is refused or let through by
    /// mistake when a setting is added.
    @Test func knownKeysAreTheProperties() throws {
        func check<T: StrictlyKeyed & Decodable>(_ type: T.Type, _ json: String, ignoring: Set<String> = []) throws {
            let value = try JSONDecoder().decode(T.self, from: Data(json.utf8))
            let properties = Set(Mirror(reflecting: value).children.compactMap(\.label)).subtracting(ignoring)
            #expect(Set(T.Keys.allCases.map(\.stringValue)) == properties, "\(T.self)")
        }
        try check(SandboxConfiguration.self, "{}", ignoring: ["baseDirectory"])
        try check(SandboxConfiguration.Listener.self, #"{"name":"a","host":"::","port":1,"tls":false}"#)
        try check(SandboxConfiguration.TLS.self, "{}")
        try check(SandboxConfiguration.Limits.self, "{}")
        try check(APNsSettings.self, "{}")
        try check(TeamConfiguration.self, #"{"teamID":"T"}"#)
        try check(TeamConfiguration.Key.self, #"{"keyID":"K"}"#)
        try check(DeviceConfiguration.self, #"{"token":"ab"}"#)
        try check(AppConfiguration.self, #"{"bundleID":"a","teamID":"T"}"#)
        try check(StorageSettings.self, "{}")
        try check(DeliverySettings.self, "{}")
        try check(ExtensionSettings.self, "{}")
        try check(EventSettings.self, "{}")
        try check(WebhookConfiguration.self, "{}")
        try check(WebhookConfiguration.Subscription.self, #"{"id":"a","url":"http://x"}"#)
        try check(AdminSettings.self, "{}")
        try check(ClockSettings.self, "{}")
    }

    /// The shipped file sets every key of every section (config/README.md says so), so it shows every setting.
    @Test func shippedFileSetsEveryKey() throws {
        let data = try Data(contentsOf: packageRoot().appendingPathComponent("config/sandbox.json"))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        func check<T: StrictlyKeyed>(_ type: T.Type, _ object: Any?, _ path: String, ignoring: Set<String> = []) {
            guard let object = object as? [String: Any] else {
                Issue.record("\(path) is missing from config/sandbox.json")
                return
            }
            let missing = Set(T.Keys.allCases.map(\.stringValue)).subtracting(object.keys).subtracting(ignoring)
            #expect(missing.isEmpty, "\(path) lacks \(missing.sorted())")
        }
        check(SandboxConfiguration.self, root, "the top level")
        check(SandboxConfiguration.Listener.self, (root["listeners"] as? [Any])?.first, "listeners[0]")
        check(SandboxConfiguration.TLS.self, root["tls"], "tls")
        check(SandboxConfiguration.Limits.self, root["limits"], "limits")
        check(APNsSettings.self, root["apns"], "apns")
        check(StorageSettings.self, root["storage"], "storage")
        check(DeliverySettings.self, root["delivery"], "delivery")
        check(ExtensionSettings.self, root["extensions"], "extensions")
        check(EventSettings.self, root["events"], "events")
        check(WebhookConfiguration.self, root["webhooks"], "webhooks")
        check(AdminSettings.self, root["admin"], "admin")
        check(ClockSettings.self, root["clock"], "clock")
        check(DashboardSettings.self, root["dashboard"], "dashboard")
        let team = (root["teams"] as? [[String: Any]])?.first
        check(TeamConfiguration.self, team, "teams[0]")
        check(TeamConfiguration.Key.self, (team?["keys"] as? [Any])?.first, "teams[0].keys[0]")
        check(AppConfiguration.self, (root["apps"] as? [Any])?.first, "apps[0]")
        check(DeviceConfiguration.self, (root["devices"] as? [Any])?.first, "devices[0]")
    }

    /// The clock section: off by default; an unknown key, a bad instant, or start options without
    /// `virtual` stop the server with an error naming the key.
    @Test func clockSectionIsCheckedNamingTheKey() throws {
        #expect(SandboxConfiguration().clock == ClockSettings(virtual: false, frozen: false, startAt: nil))
        let good = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(
            #"{"clock": {"virtual": true, "frozen": true, "startAt": "2026-01-01T00:00:00Z"}}"#.utf8))
        try good.validate()
        #expect(good.clock.startMilliseconds == 1_767_225_600_000)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("sandbox.json")
        try Data(#"{"clock": {"virtual": true, "frozn": true}}"#.utf8).write(to: file)
        #expect(throws: ConfigurationError.self) { try SandboxConfiguration.load(path: file.path) }
        do {
            _ = try SandboxConfiguration.load(path: file.path)
        } catch {
            #expect("\(error)".contains("clock.frozn: unknown key"), "\(error)")
        }
        for (json, key) in [
            (#"{"clock": {"virtual": true, "startAt": "tomorrow"}}"#, "clock.startAt"),
            (#"{"clock": {"virtual": true, "startAt": "1969-12-31T23:59:59Z"}}"#, "clock.startAt"),
            (#"{"clock": {"frozen": true}}"#, "clock.virtual"),
        ] {
            let configuration = try JSONDecoder().decode(SandboxConfiguration.self, from: Data(json.utf8))
            do {
                try configuration.validate()
                Issue.record("\(json): expected an error")
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
    }

    /// Half a user certificate (file without key) is rejected up front.
    @Test func rejectsCertificateWithoutKey() {
        var configuration = SandboxConfiguration()
        configuration.tls.certificateFile = "/tmp/cert.pem"
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
    }
}

/// The configuration file against changes made through the API, across restarts.
@Suite struct ConfigurationPrecedenceTests {
    static func app(_ server: TestServer) async throws -> [String: Any] {
        let answer = try await apiRequest("GET", "\(server.httpBase)/api/v1/apps/\(testTopic)")
        return answer.json ?? [:]
    }

    /// The fingerprint of a file's entry is stable across releases (a change would make every upgrade
    /// re-apply the file over the API's changes): pinned for one entry.
    @Test func fingerprintsArePinned() throws {
        let app = AppConfiguration(bundleID: "com.example.app", teamID: "TEAM", strings: ["en": ["K": "v"]])
        let fingerprint = try ConfigurationSeed.fingerprint(app)
        #expect(fingerprint == Self.pinnedAppFingerprint, "the fingerprint changed: \(fingerprint)")
    }

    static let pinnedAppFingerprint = "5c2b2c2446f36432faaa4128d714b4427bf2b55a9fce7d32f96055d6fc30604b"

    /// An extension set through the API survives a restart with the same file; once the file's entry for the
    /// app changes, the file wins (and the log says so). A device of the file keeps its API changes likewise.
    @Test func apiChangesSurviveRestartsUntilTheFileChanges() async throws {
        let data = try makeTemporaryDirectory("precedence")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let device = String(repeating: "c3", count: 32)
        func configure(greeting: String, locale: String) -> (inout SandboxConfiguration) -> Void {
            { configuration in
                configuration.dataDirectory = data
                configuration.apps = [AppConfiguration(bundleID: testTopic, teamID: testTeamID, strings: ["en": ["HI": greeting]])]
                configuration.devices = [DeviceConfiguration(token: device, locale: locale, apps: [testTopic])]
            }
        }
        let builtin = #"{"kind":"builtin","steps":[{"step":"rewrite","title":"[x] {{title}}"}]}"#
        try await withServer(configure: configure(greeting: "Hello", locale: "en_US")) { server in
            let patched = try await apiRequest(
                "PATCH", "\(server.httpBase)/api/v1/apps/\(testTopic)", #"{"serviceExtension":\#(builtin)}"#)
            #expect(patched.status == 200)
            let moved = try await apiRequest("PATCH", "\(server.httpBase)/api/v1/devices/\(device)", #"{"locale":"fr_FR"}"#)
            #expect(moved.status == 200)
        }
        try await withServer(configure: configure(greeting: "Hello", locale: "en_US")) { server in
            let app = try await Self.app(server)
            #expect(app["serviceExtension"] != nil, "the API's extension is gone after a restart: \(app)")
            let stored = try await apiRequest("GET", "\(server.httpBase)/api/v1/devices/\(device)")
            #expect(stored.json?["locale"] as? String == "fr_FR")
            #expect(!server.logSink.capturedLines.joined().contains("configuration file changed"))
        }
        try await withServer(configure: configure(greeting: "Bonjour", locale: "de_DE")) { server in
            let app = try await Self.app(server)
            #expect(app["serviceExtension"] == nil, "\(app)")
            #expect((app["strings"] as? [String: [String: String]])?["en"]?["HI"] == "Bonjour")
            let stored = try await apiRequest("GET", "\(server.httpBase)/api/v1/devices/\(device)")
            #expect(stored.json?["locale"] as? String == "de_DE")
            let log = server.logSink.capturedLines.joined(separator: "\n")
            #expect(log.contains("configuration file changed this app") && log.contains("configuration file changed this device"), "\(log)")
        }
    }
}
