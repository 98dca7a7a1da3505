// APNs Sandbox — the command line as a user meets it: help and errors.
import Foundation
import TestProcessSupport
import Testing

@Suite struct CommandLineTests {
    /// `<command> --help` prints that command's usage (exit 0), not the global one; a bad option prints the
    /// command's usage with the error (exit 2).
    @Test func commandHelpIsTheCommandsOwn() async throws {
        let binary = try GracefulShutdownTests.executable()
        for (command, option) in [("serve", "--http-port"), ("token", "--key-id"), ("client-cert", "--bundle-id"),
                                  ("healthcheck", "--url")] {
            let help = try await run(binary, args: [command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdoutText.hasPrefix("usage: apns-sandbox \(command) "), "\(command): \(help)")
            #expect(help.stdoutText.contains(option))
            let others = ["serve", "token", "client-cert", "healthcheck"].filter { $0 != command }
            #expect(!others.contains { help.stdoutText.contains("\n  \($0) ") }, "\(command) shows other commands")
            let bad = try await run(binary, args: [command, "--nope", "x"])
            #expect(bad.status == 2)
            #expect(bad.stderrText.contains("unknown option --nope") && bad.stderrText.contains("apns-sandbox \(command)"))
        }
        let global = try await run(binary, args: ["--help"])
        #expect(global.status == 0 && global.stdoutText.contains("client-cert") && global.stdoutText.contains("serve"))
    }

    /// The README's one-liner for load tools: with the shipped config/sandbox.json (APNs' one stream before a
    /// valid provider token), `nghttp -m 3` opens three push streams before it reads SETTINGS and two are
    /// refused (RST_STREAM REFUSED_STREAM, as APNs does); with `APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION=0`
    /// all three are answered 200.
    @Test func loadToolOneLinerLiftsTheStreamLimitBeforeAuthentication() async throws {
        let binary = try GracefulShutdownTests.executable()
        let config = TestPaths.packageRoot + "/config/sandbox.json"
        let directory = try makeTemporaryDirectory("one-liner")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = directory + "/payload.json"
        try #"{"aps":{"alert":"Hello"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
        let token = try await run(binary, args: ["token", "--config", config])
        let jwt = token.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.status == 0 && !jwt.isEmpty, "\(token)")
        let device = String(repeating: "deadbeef", count: 8)

        func nghttpAgainst(environment: [String: String]) async throws -> ProcessOutput {
            let (server, port) = try await GracefulShutdownTests.startServing(binary, environment: environment) { port in
                [
                    "serve", "--config", config, "--data-dir", "\(directory)/data-\(environment.count)-\(port)",
                    "--http-port", "\(port)", "--tls-port", "0", "--log-level", "notice",
                ]
            }
            defer { server.send(signal: SIGKILL) }
            return try await run("nghttp", args: [
                "-n", "-m", "3", "-t", "10", "-d", payload, "-H", "authorization: bearer \(jwt)",
                "-H", "apns-topic: com.example.app", "http://127.0.0.1:\(port)/3/device/\(device)",
            ])
        }

        // (nghttp exits 0 either way; it reports requests that got no response on stderr.)
        let apnsRule = try await nghttpAgainst(environment: [:])
        #expect(apnsRule.stderrText.contains("total=3, processed=1"), "two of three streams are refused: \(apnsRule)")
        let lifted = try await nghttpAgainst(environment: ["APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION": "0"])
        #expect(lifted.status == 0 && !lifted.stderrText.contains("not processed"), "every stream is answered: \(lifted)")
    }

    /// `healthcheck` asks the configured cleartext listener: its port from the file (`--config` or
    /// `APNS_SANDBOX_CONFIG`, as the Docker image sets it), not only `APNS_SANDBOX_HTTP_PORT`.
    @Test func healthcheckFollowsTheConfiguredPort() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("healthcheck")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/sandbox.json"
        // The port must be in the file before the server starts (the healthcheck reads it there): picked, not 0.
        let (server, port) = try await GracefulShutdownTests.startServing(binary, port: .picked) { port in
            try #"{"dataDirectory":"\#(directory)/data","listeners":[{"name":"cleartext","host":"::","port":\#(port),"tls":false}]}"#
                .write(toFile: config, atomically: true, encoding: .utf8)
            return ["serve", "--config", config, "--log-level", "notice"]
        }
        defer { server.send(signal: SIGKILL) }
        let viaFlag = try await run(binary, args: ["healthcheck", "--config", config])
        #expect(viaFlag.status == 0, "\(viaFlag)")
        #expect(viaFlag.stdoutText.contains(":\(port)/healthz: 200"))
        let viaEnvironment = try await run(binary, args: ["healthcheck"], environment: ["APNS_SANDBOX_CONFIG": config])
        #expect(viaEnvironment.status == 0, "\(viaEnvironment)")
        // A proxy in the container's environment (nothing listens on port 9) is not asked.
        let proxied = try await run(binary, args: ["healthcheck"], environment: [
            "APNS_SANDBOX_CONFIG": config, "http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
            "all_proxy": "http://127.0.0.1:9",
        ])
        #expect(proxied.status == 0, "\(proxied)")
        let elsewhere = try await run(
            binary, args: ["healthcheck"], environment: ["APNS_SANDBOX_CONFIG": config, "APNS_SANDBOX_HTTP_PORT": "1"])
        #expect(elsewhere.status == 1)
    }

    /// A port in use is an error that names the listener and the address, and nothing stays listening.
    @Test func portInUseNamesTheListener() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("port-in-use")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let holder = try ChildProcess("python3", arguments: ["-c", """
            import socket, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
            time.sleep(\(Int(TestTime.seconds(60))))
            """])
        defer { holder.send(signal: SIGKILL) }
        var held: Int?
        for _ in 0..<100 where held == nil {
            held = Int(holder.currentStdout.trimmingCharacters(in: .whitespacesAndNewlines))
            if held == nil { try await Task.sleep(nanoseconds: 20_000_000) }
        }
        let port = try #require(held)
        let output = try await run(binary, args: [
            "serve", "--data-dir", directory, "--host", "127.0.0.1", "--tls-port", "0", "--http-port", "\(port)",
        ])
        #expect(output.status != 0)
        #expect(output.stderrText.contains("listener cleartext cannot listen on 127.0.0.1:\(port): Address already in use"),
                "\(output)")
    }

    /// `--log-level debug` logs one line per request and one per push (with its apns-id, status and reason);
    /// trace adds the request's header fields, without the provider token.
    @Test func debugLogsEveryRequestAndPush() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("debug-log")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try GracefulShutdownTests.writeConfiguration(in: directory)
        let token = try await run(binary, args: ["token", "--config", config]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        for level in ["debug", "trace"] {
            let (server, port) = try await GracefulShutdownTests.startServing(binary) { port in
                [
                    "serve", "--config", config, "--data-dir", directory + "/data-" + level, "--tls-port", "0",
                    "--http-port", "\(port)", "--host", "127.0.0.1", "--log-level", level,
                ]
            }
            defer { server.send(signal: SIGKILL) }
            let base = "http://127.0.0.1:\(port)"
            let accepted = try await pushAlert(base: base, authorization: "authorization: bearer \(token)")
            #expect(!accepted.isEmpty)
            _ = try await pushAlert(base: base, authorization: "authorization: bearer \(token)", device: "abcd")
            let log = server.currentStderr
            #expect(log.contains("] request ") && log.contains("http.path=/healthz"), "\(level): \(log)")
            #expect(log.contains("push") && log.contains("apns.id=\(accepted)") && log.contains("http.status=200"), "\(log)")
            #expect(log.contains("apns.reason=BadDeviceToken"), "\(log)")
            #expect(log.contains("request headers") == (level == "trace"), "\(level)")
            #expect(!log.contains(token), "the provider token is in the log")
        }
    }

    /// A value the configuration file gets wrong is reported with the file and the key path as written.
    @Test func validationErrorsNameTheFileAndKey() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("bad-config")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/sandbox.json"
        try #"{"listeners":[{"name":"tls","host":"::","port":99999,"tls":true}]}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let output = try await run(binary, args: ["serve", "--config", config, "--data-dir", directory + "/data"])
        #expect(output.status == 2)
        #expect(output.stderrText.contains("invalid configuration \(config): listeners[0].port (listener tls): 99999"), "\(output)")
    }

    /// A log level that is none of the names stops `serve` before anything starts: `--log-level` as before,
    /// `APNS_SANDBOX_LOG_LEVEL` naming the variable.
    @Test func unknownLogLevelIsRefused() async throws {
        let binary = try GracefulShutdownTests.executable()
        let flag = try await run(binary, args: ["serve", "--log-level", "loud"])
        #expect(flag.status == 2, "\(flag)")
        #expect(flag.stderrText.contains("unknown log level loud (one of trace, debug, info, notice, warning, error)"), "\(flag)")
        let variable = try await run(binary, args: ["serve"], environment: ["APNS_SANDBOX_LOG_LEVEL": "loud"])
        #expect(variable.status == 2, "\(variable)")
        #expect(variable.stderrText.contains("APNS_SANDBOX_LOG_LEVEL=loud must be one of trace, debug"), "\(variable)")
    }
}
