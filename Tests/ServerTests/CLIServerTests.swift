// APNs Sandbox — the command line against a running sandbox: push, token, snapshot, --json, keys, admin token.
import Foundation
import Testing

@Suite struct CLIServerTests {
    /// A configuration file with the test team's key, so that `push --config` signs the server's way.
    static func configuration(for server: TestServer, in directory: String) throws -> String {
        let key = server.configuration.teams[0].keys[0]
        let file = directory + "/sandbox.json"
        let text = #"{"teams":[{"teamID":"\#(testTeamID)","keys":[{"keyID":"\#(key.keyID)","privateKeyFile":"\#(key.privateKeyFile ?? "")"}],"apps":["\#(testTopic)"]}]}"#
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Runs the binary with `--url` (and `--data-dir`) of `server`.
    static func cli(_ server: TestServer, _ arguments: [String], stdin: Data? = nil) async throws -> ProcessOutput {
        let binary = try GracefulShutdownTests.executable()
        return try await run(binary, args: arguments, stdin: stdin, environment: [
            "APNS_SANDBOX_URL": server.httpBase, "APNS_SANDBOX_DATA_DIR": server.dataDirectory,
        ])
    }

    /// `push` of an `.apns` file (bundle from "Simulator Target Bundle") with `--wait` prints the accepted
    /// apns-id, then what the device displayed, the outcome and the timeline; `--json` has the same record.
    @Test func pushApnsFileWaitShowsTheDisplayedContent() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory("cli-push")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.configuration(for: server, in: directory)
            let file = directory + "/greeting.apns"
            try #"{"Simulator Target Bundle":"\#(testTopic)","aps":{"alert":{"title":"Hello","subtitle":"From the CLI","body":"It works"},"badge":4,"sound":"default"}}"#
                .write(toFile: file, atomically: true, encoding: .utf8)
            let output = try await Self.cli(server, ["push", deviceToken, file, "--config", config, "--wait"])
            #expect(output.status == 0, "\(output)")
            let text = output.stdoutText
            #expect(text.hasPrefix("200 accepted apns-id "), "\(output)")
            for line in ["status    displayed", "title     Hello", "subtitle  From the CLI", "body      It works", "badge     4"] {
                #expect(text.contains(line), "missing \(line): \(text)")
            }
            #expect(text.contains("outcome   ") && text.contains("timeline  accepted +"), "\(text)")

            // From standard input, with the bundle id given and every header flag; --json for scripts.
            let apnsID = UUID().uuidString.lowercased()
            let json = try await Self.cli(server, [
                "push", deviceToken, testTopic, "-", "--config", config, "--wait", "--json", "--apns-id", apnsID,
                "--priority", "10", "--collapse-id", "greeting", "--expiration", "0", "--environment", "development",
                "--type", "alert",
            ], stdin: Data(#"{"aps":{"alert":{"title":"Again"}}}"#.utf8))
            #expect(json.status == 0, "\(json)")
            let answer = try #require(jsonObject(json.stdoutText), "\(json)")
            #expect(answer["status"] as? Int == 200 && answer["apnsId"] as? String == apnsID)
            let record = try #require(answer["notification"] as? [String: Any])
            #expect(record["collapseId"] as? String == "greeting" && record["status"] as? String == "displayed")
            #expect((record["displayed"] as? [String: Any])?["title"] as? String == "Again")
            #expect(record["payload"].map { "\($0)" }?.contains("Simulator") == false)

            // A device that is offline stores the push: --wait runs out before it is final (exit 3).
            #expect(try await Self.cli(server, ["devices", "offline", deviceToken]).status == 0)
            let stored = try await Self.cli(server, ["push", deviceToken, file, "--config", config, "--wait", "--wait-timeout", "0.3"])
            #expect(stored.status == 3 && stored.stdoutText.contains("status    stored"), "\(stored)")

            // APNs' refusal is printed, and the exit status says so.
            let rejected = try await Self.cli(server, ["push", "abcd", testTopic, file, "--config", config])
            #expect(rejected.status == 1 && rejected.stdoutText.hasPrefix("400 BadDeviceToken"), "\(rejected)")
        }
    }

    /// `token`'s output is a provider token the server accepts, with curl and with `push --token`.
    @Test func tokenOutputIsAcceptedByTheServer() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory("cli-token")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.configuration(for: server, in: directory)
            let token = try await Self.cli(server, ["token", "--config", config])
            #expect(token.status == 0, "\(token)")
            let jwt = token.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            let viaCurl = try await curl([
                "-o", "/dev/null", "-w", "%{http_code}", "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: \(testTopic)",
                "-d", #"{"aps":{"alert":"hi"}}"#, server.httpBase + "/3/device/" + deviceToken,
            ])
            #expect(viaCurl.stdoutText == "200", "\(viaCurl)")
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":"hi"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            let viaPush = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--token", jwt])
            #expect(viaPush.status == 0 && viaPush.stdoutText.hasPrefix("200 accepted"), "\(viaPush)")
            let forged = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--token", jwt + "x"])
            #expect(forged.status == 1 && forged.stdoutText.hasPrefix("403 InvalidProviderToken"), "\(forged)")
        }
    }

    /// `snapshot save`, then `snapshot load` into a sandbox with a fresh data directory: the same answers
    /// for devices, apps and notifications.
    @Test func snapshotSaveAndLoadGiveIdenticalAnswers() async throws {
        let directory = try makeTemporaryDirectory("cli-snapshot")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/snapshot.json"
        let queries: [[String]] = [["devices", "list", "--json"], ["apps", "list", "--json"], ["devices", "show", deviceToken, "--json"]]
        let before = try await withServer { server in
            let config = try Self.configuration(for: server, in: directory)
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":"kept"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            #expect(try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--config", config, "--wait"]).status == 0)
            #expect(try await Self.cli(server, ["devices", "add", "--locale", "fr_FR", "--apps", testTopic, "--offline"]).status == 0)
            let saved = try await Self.cli(server, ["snapshot", "save", file, "--notifications"])
            #expect(saved.status == 0 && saved.stdoutText == file + "\n", "\(saved)")
            var answers: [String] = []
            for query in queries { answers.append(try await Self.cli(server, query).stdoutText) }
            answers.append(try await curl([server.httpBase + "/api/v1/notifications"]).stdoutText)
            return answers
        }
        let after = try await withServer { server in
            let loaded = try await Self.cli(server, ["snapshot", "load", file])
            #expect(loaded.status == 0 && loaded.stdoutText == "loaded\n", "\(loaded)")
            var answers: [String] = []
            for query in queries { answers.append(try await Self.cli(server, query).stdoutText) }
            answers.append(try await curl([server.httpBase + "/api/v1/notifications"]).stdoutText)
            return answers
        }
        #expect(before.count == after.count)
        for (index, (old, new)) in zip(before, after).enumerated() {
            #expect(!old.isEmpty && old == new, "answer \(index) differs:\n\(old)\n\(new)")
        }
        #expect(before[0].contains("fr_FR"))
    }

    /// `--json` output parses, and the human output of the same commands reads as columns and fields.
    @Test func jsonOutputParses() async throws {
        try await withServer(configure: { $0.clock.virtual = true }) { server in
            let added = try await Self.cli(server, ["devices", "add", "--apps", testTopic, "--json"])
            let device = try #require(jsonObject(added.stdoutText), "\(added)")
            let token = try #require(device["token"] as? String)
            for (arguments, key) in [
                (["devices", "list", "--json"], "devices"), (["apps", "list", "--json"], "apps"),
                (["devices", "offline", token, "--json"], "online"), (["devices", "online", token, "--json"], "online"),
                (["devices", "uninstall", token, testTopic, "--json"], "apps"), (["devices", "install", token, testTopic, "--json"], "apps"),
                (["apps", "show", testTopic, "--json"], "teamId"), (["clock", "show", "--json"], "mode"),
                (["clock", "freeze", "--json"], "mode"), (["clock", "advance", "31", "--json"], "now"),
                (["clock", "set", "2030-01-01T00:00:00Z", "--json"], "now"), (["clock", "resume", "--json"], "mode"),
                (["faults", "add", "--preset", "outage", "--duration", "30", "--json"], "id"),
                (["faults", "list", "--json"], "rules"),
                (["snapshot", "save", "--json"], "devices"),
            ] as [([String], String?)] {
                let output = try await Self.cli(server, arguments)
                #expect(output.status == 0, "\(arguments): \(output)")
                let object = jsonObject(output.stdoutText)
                #expect(object != nil, "\(arguments) is not JSON: \(output)")
                if let key { #expect(object?[key] != nil, "\(arguments) has no \(key): \(output)") }
                if let check = Self.jsonChecks[arguments.prefix(2).joined(separator: " ")], let object {
                    #expect(check(object), "\(arguments): unexpected values: \(output)")
                }
            }
            let clock = try #require(jsonObject(try await Self.cli(server, ["clock", "show", "--json"]).stdoutText))
            #expect((clock["now"] as? String)?.hasPrefix("2030-01-01") == true, "\(clock)")
            let list = try await Self.cli(server, ["devices", "list"])
            #expect(list.stdoutText.hasPrefix("TOKEN ") && list.stdoutText.contains(token), "\(list)")
            #expect(try await Self.cli(server, ["faults", "clear"]).stdoutText == "cleared\n")
            let removed = try await Self.cli(server, ["devices", "rm", token])
            #expect(removed.status == 0 && removed.stdoutText == "deleted \(token)\n", "\(removed)")
            let missing = try await Self.cli(server, ["devices", "show", token])
            #expect(missing.status == 1 && missing.stderrText.contains("404 not_found"), "\(missing)")
            let reset = try await Self.cli(server, ["reset", "--json"])
            #expect(reset.status == 0 && jsonObject(reset.stdoutText) != nil, "\(reset)")
            #expect(try await Self.cli(server, ["reset", "--bundle-id", testTopic]).stdoutText == "reset\n")
        }
    }

    /// What the `--json` answers of `jsonOutputParses` must say (a virtual clock; the device has `testTopic`).
    static let jsonChecks: [String: @Sendable ([String: Any]) -> Bool] = [
        "devices offline": { $0["online"] as? Bool == false },
        "devices online": { $0["online"] as? Bool == true },
        "devices uninstall": { app(testTopic, of: $0).map { $0["uninstalledAt"] is NSNumber } == true },
        "devices install": { app(testTopic, of: $0).map { $0["uninstalledAt"] == nil || $0["uninstalledAt"] is NSNull } == true },
        "apps show": { $0["bundleId"] as? String == testTopic && $0["teamId"] as? String == testTeamID },
        "clock freeze": { $0["mode"] as? String == "frozen" },
        "clock resume": { $0["mode"] as? String == "running" },
        "faults list": { ($0["rules"] as? [[String: Any]])?.count == 1 },
    ]

    /// The entry of `bundleID` in a device's `apps`.
    static func app(_ bundleID: String, of device: [String: Any]) -> [String: Any]? {
        (device["apps"] as? [[String: Any]])?.first { $0["bundleId"] as? String == bundleID }
    }

    /// `keys create` writes a `.p8` (mode 0600) and prints its Key ID and configuration entry; a sandbox
    /// configured with that entry accepts pushes signed with the key.
    @Test func keysCreateMakesAKeyTheServerAccepts() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("cli-keys")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let created = try await run(binary, args: ["keys", "create", "--team", "NEWTEAM001", "--out", directory, "--json"])
        #expect(created.status == 0, "\(created)")
        let answer = try #require(jsonObject(created.stdoutText))
        let keyID = try #require(answer["keyId"] as? String)
        let file = try #require(answer["file"] as? String)
        #expect(keyID.count == 10 && file == directory + "/AuthKey_\(keyID).p8")
        let permissions = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let again = try await run(binary, args: ["keys", "create", "--team", "NEWTEAM001", "--out", directory, "--key-id", keyID])
        #expect(again.status == 2 && again.stderrText.contains("exists"), "\(again)")
        let human = try await run(binary, args: ["keys", "create", "--team", "NEWTEAM001", "--out", directory])
        #expect(human.stdoutText.hasPrefix("Key ID: ") && human.stdoutText.contains(#""teamID":"NEWTEAM001""#), "\(human)")

        let config = directory + "/sandbox.json"
        let entry = try JSONSerialization.data(withJSONObject: try #require(answer["configuration"]))
        try #"{"teams":[\#(String(decoding: entry, as: UTF8.self))]}"#.write(toFile: config, atomically: true, encoding: .utf8)
        try await withServer(configure: {
            $0.teams.append(.init(teamID: "NEWTEAM001", keys: [.init(keyID: keyID, privateKeyFile: file)], apps: ["com.new.app"]))
        }) { server in
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":"new key"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            let pushed = try await Self.cli(server, ["push", deviceToken, "com.new.app", payload, "--config", config])
            #expect(pushed.status == 0, "\(pushed)")
        }
    }

    /// With admin authentication required, the admin token comes from `APNS_SANDBOX_ADMIN_TOKEN`,
    /// `--admin-token-file` or `<data-dir>/admin-token`; without it the answer is a one-line 401.
    @Test func adminTokenFromEnvironmentFileOrDataDirectory() async throws {
        let secret = "cli-admin-token-0123456789"
        try await withServer(configure: {
            $0.admin.authentication = .required
            $0.admin.token = secret
        }) { server in
            let binary = try GracefulShutdownTests.executable()
            let base = ["devices", "list", "--url", server.httpBase]
            let refused = try await run(binary, args: base + ["--data-dir", "/nonexistent"])
            #expect(refused.status == 1 && refused.stderrText.contains("401"), "\(refused)")
            let viaEnvironment = try await run(binary, args: base + ["--data-dir", "/nonexistent"], environment: ["APNS_SANDBOX_ADMIN_TOKEN": secret])
            #expect(viaEnvironment.status == 0, "\(viaEnvironment)")
            let directory = try makeTemporaryDirectory("cli-admin")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try (secret + "\n").write(toFile: directory + "/admin-token", atomically: true, encoding: .utf8)
            let viaFile = try await run(binary, args: base + ["--admin-token-file", directory + "/admin-token"])
            #expect(viaFile.status == 0, "\(viaFile)")
            let viaDataDirectory = try await run(binary, args: base + ["--data-dir", directory])
            #expect(viaDataDirectory.status == 0, "\(viaDataDirectory)")
        }
    }

    /// `events` follows the SSE stream: one readable line per event (or the envelope with `--json`), filtered
    /// by type, resumed with `--last-event-id`, ending after `--count` events; a bad filter is exit 1.
    @Test func eventsFollowsTheStream() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory("cli-events")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.configuration(for: server, in: directory)
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":{"title":"Streamed"}}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            #expect(try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--config", config, "--wait"]).status == 0)
            let types = "push.accepted,notification.displayed"
            let pretty = try await Self.cli(server, ["events", "--last-event-id", "0", "--type", types, "--count", "2"])
            #expect(pretty.status == 0, "\(pretty)")
            let lines = pretty.stdoutText.split(separator: "\n")
            #expect(lines.count == 2 && lines[0].contains("  push.accepted  ") && lines[1].contains("notification.displayed"), "\(pretty)")
            #expect(lines.last?.hasSuffix("\"Streamed\"") == true, "\(pretty)")
            let json = try await Self.cli(server, ["events", "--last-event-id", "0", "--type", types, "--count", "2", "--json"])
            let envelopes = json.stdoutText.split(separator: "\n").compactMap { jsonObject(String($0)) }
            #expect(envelopes.map { $0["type"] as? String } == ["push.accepted", "notification.displayed"], "\(json)")
            // Live: started before the push, it prints the push's event as it happens.
            let binary = try GracefulShutdownTests.executable()
            let live = try ChildProcess(binary, arguments: [
                "events", "--url", server.httpBase, "--type", "push.accepted", "--device", deviceToken, "--count", "1",
            ])
            // Its subscription has no acknowledgement: push until it has seen one (and ended, after --count 1).
            for _ in 0..<50 where live.wait(timeout: 0) == nil {
                #expect(try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--config", config]).status == 0)
                _ = await offload { live.wait(timeout: 0.2) }
            }
            let followed = await offload { live.finish(timeout: 10) }
            #expect(followed.status == 0 && followed.stdoutText.contains("push.accepted"), "\(followed)")
            let bad = try await Self.cli(server, ["events", "--type", "nope"])
            #expect(bad.status == 1 && bad.stderrText.contains("400 invalid_parameter"), "\(bad)")
        }
    }

    /// `push --cert` authenticates with a client certificate from `client-cert` over the TLS listener.
    @Test func pushWithAClientCertificate() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory("cli-cert")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let prefix = directory + "/client"
            let issued = try await Self.cli(server, ["client-cert", "--data-dir", server.dataDirectory, "--bundle-id", testTopic, "--out", prefix])
            #expect(issued.status == 0, "\(issued)")
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":{"title":"Certified"}}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            let pushed = try await Self.cli(server, [
                "push", deviceToken, testTopic, payload, "--cert", prefix, "--provider-url", server.tlsBase, "--ca", server.caPath, "--wait",
            ])
            #expect(pushed.status == 0 && pushed.stdoutText.contains("title     Certified"), "\(pushed)")
            let missing = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--cert", directory + "/none"])
            #expect(missing.status == 2 && missing.stderrText.contains("cannot read \(directory)/none.pem"), "\(missing)")
        }
    }
}
