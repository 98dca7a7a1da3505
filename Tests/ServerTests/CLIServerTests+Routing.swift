// APNs Sandbox — the command line against a running sandbox: push types, environments, TLS with the data
// directory's CA, fault removal, snapshots from standard input, a silent event stream.
import Foundation
import TestProcessSupport
import Testing

extension CLIServerTests {
    /// `push --type widgets` and `--type controls` send the topic APNsProtocol's PushType expects
    /// (`.push-type.widgets`, `.push-type.controls`) and are accepted.
    @Test func widgetsAndControlsPushesAreAccepted() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory("cli-types")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.configuration(for: server, in: directory)
            let payload = directory + "/reload.json"
            try #"{"aps":{"content-changed":true}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            for type in ["widgets", "controls"] {
                let pushed = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--config", config, "--type", type, "--json"])
                #expect(pushed.status == 0, "\(type): \(pushed)")
                #expect(jsonObject(pushed.stdoutText)?["status"] as? Int == 200, "\(type): \(pushed)")
            }
        }
    }

    /// `--environment` picks the environment through Apple's host names: a development device is
    /// BadDeviceToken in production.
    @Test func environmentProductionRoutesAsProduction() async throws {
        try await withServer { server in
            let directory = try makeTemporaryDirectory("cli-env")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.configuration(for: server, in: directory)
            let added = try await Self.cli(server, ["devices", "add", "--apps", testTopic, "--environment", "development", "--json"])
            let token = try #require(jsonObject(added.stdoutText)?["token"] as? String, "\(added)")
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":"where"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            let production = try await Self.cli(server, ["push", token, testTopic, payload, "--config", config, "--environment", "production"])
            #expect(production.status == 1 && production.stdoutText.hasPrefix("400 BadDeviceToken"), "\(production)")
            let development = try await Self.cli(server, ["push", token, testTopic, payload, "--config", config, "--environment", "development"])
            #expect(development.status == 0 && development.stdoutText.hasPrefix("200 accepted"), "\(development)")
        }
    }

    /// A token push to the TLS listener trusts `<data-dir>/ca.pem` without `--ca`; `--cert` without an
    /// https:// `--provider-url` is a usage error (the cleartext listener never sees the certificate).
    @Test func httpsProviderURLUsesTheDataDirectoryCA() async throws {
        try await withServer { server in
            #expect(server.caPath == server.dataDirectory + "/ca.pem")
            let directory = try makeTemporaryDirectory("cli-https")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.configuration(for: server, in: directory)
            let payload = directory + "/p.json"
            try #"{"aps":{"alert":"over TLS"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            let pushed = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--config", config, "--provider-url", server.tlsBase])
            #expect(pushed.status == 0 && pushed.stdoutText.hasPrefix("200 accepted"), "\(pushed)")
            // Without the CA (another data directory), the TLS listener's certificate is not trusted.
            let untrusted = try await Self.cli(server, [
                "push", deviceToken, testTopic, payload, "--config", config, "--provider-url", server.tlsBase, "--data-dir", directory,
            ])
            #expect(untrusted.status == 1, "\(untrusted)")

            let prefix = directory + "/client"
            #expect(try await Self.cli(server, ["client-cert", "--data-dir", server.dataDirectory, "--bundle-id", testTopic, "--out", prefix]).status == 0)
            let cleartext = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--cert", prefix])
            #expect(cleartext.status == 2 && cleartext.stderrText.contains("--cert needs --provider-url https://"), "\(cleartext)")
            let certified = try await Self.cli(server, ["push", deviceToken, testTopic, payload, "--cert", prefix, "--provider-url", server.tlsBase])
            #expect(certified.status == 0 && certified.stdoutText.hasPrefix("200 accepted"), "\(certified)")
        }
    }

    /// `faults rm` removes the rule (a second removal is the server's 404); `snapshot load -` reads the
    /// document from standard input.
    @Test func faultsRmAndSnapshotLoadFromStandardInput() async throws {
        try await withServer { server in
            let added = try await Self.cli(server, ["faults", "add", "--preset", "outage", "--duration", "30"])
            let id = added.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(added.status == 0 && !id.isEmpty, "\(added)")
            let removed = try await Self.cli(server, ["faults", "rm", id])
            #expect(removed.status == 0 && removed.stdoutText == "removed \(id)\n", "\(removed)")
            let rules = try #require(jsonObject(try await Self.cli(server, ["faults", "list", "--json"]).stdoutText))
            #expect((rules["rules"] as? [Any])?.isEmpty == true, "\(rules)")
            let again = try await Self.cli(server, ["faults", "rm", id])
            #expect(again.status == 1 && again.stderrText.contains("404"), "\(again)")

            #expect(try await Self.cli(server, ["devices", "add", "--locale", "de_DE", "--apps", testTopic]).status == 0)
            let saved = try await Self.cli(server, ["snapshot", "save"])
            #expect(saved.status == 0, "\(saved)")
            #expect(try await Self.cli(server, ["reset"]).status == 0)
            #expect(try await Self.cli(server, ["devices", "list"]).stdoutText.contains("de_DE") == false)
            let loaded = try await Self.cli(server, ["snapshot", "load", "-"], stdin: saved.stdout)
            #expect(loaded.status == 0 && loaded.stdoutText == "loaded\n", "\(loaded)")
            #expect(try await Self.cli(server, ["devices", "list"]).stdoutText.contains("de_DE"), "the snapshot was not loaded")
        }
    }

    /// An event stream on which nothing arrives (no event, no heartbeat) for `--idle-timeout` ends with
    /// exit 1 instead of hanging.
    @Test func silentEventStreamGivesUp() async throws {
        try await withServer { server in
            let started = Date()
            let output = try await Self.cli(server, ["events", "--type", "push.accepted", "--idle-timeout", "0.5"])
            #expect(output.status == 1 && output.stderrText.contains("nothing arrived for 0.5 s"), "\(output)")
            // Without the idle limit it would never end; the bound is loose because the full suite can keep a
            // debug binary's start waiting for many seconds on 2 cores (seen: 23 s; alone it takes ~1 s).
            #expect(Date().timeIntervalSince(started) < TestTime.seconds(60), "\(output)")
        }
    }
}
