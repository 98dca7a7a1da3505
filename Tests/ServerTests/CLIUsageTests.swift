// APNs Sandbox — the command line's usage texts (golden files) and its answers to bad flags and files.
import Foundation
import Testing

/// Golden `--help` texts live in `Tests/Golden/cli/<command words joined by _>.txt`. After changing a usage
/// on purpose, regenerate them with
/// `UPDATE_GOLDEN=1 swift test --skip-build --filter CLIUsageTests` and review the diff.
@Suite struct CLIUsageTests {
    /// Every command and group whose `--help` is pinned.
    static let commands: [[String]] = [
        ["serve"], ["healthcheck"], ["token"], ["client-cert"], ["version"],
        ["push"], ["devices"], ["devices", "list"], ["devices", "show"], ["devices", "add"], ["devices", "rm"],
        ["devices", "online"], ["devices", "offline"], ["devices", "install"], ["devices", "uninstall"],
        ["apps"], ["apps", "list"], ["apps", "show"], ["apps", "add"], ["reset"],
        ["clock"], ["clock", "show"], ["clock", "freeze"], ["clock", "resume"], ["clock", "real"],
        ["clock", "advance"], ["clock", "set"],
        ["faults"], ["faults", "list"], ["faults", "add"], ["faults", "rm"], ["faults", "clear"],
        ["snapshot"], ["snapshot", "save"], ["snapshot", "load"], ["keys"], ["keys", "create"], ["events"], ["completion"],
    ]

    /// `<command> --help` prints exactly the golden text, exits 0 and writes nothing to standard error.
    @Test func helpMatchesTheGoldenFiles() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = TestPaths.packageRoot + "/Tests/Golden/cli"
        let update = ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1"
        for words in Self.commands {
            let help = try await run(binary, args: words + ["--help"])
            #expect(help.status == 0 && help.stderr.isEmpty, "\(words): \(help)")
            let file = directory + "/" + words.joined(separator: "_") + ".txt"
            if update {
                try help.stdoutText.write(toFile: file, atomically: true, encoding: .utf8)
                continue
            }
            let golden = try #require(FileManager.default.contents(atPath: file), "no golden file \(file) (UPDATE_GOLDEN=1)")
            #expect(help.stdoutText == String(decoding: golden, as: UTF8.self), "\(words.joined(separator: " ")) --help changed")
        }
    }

    /// Every command the binary knows (the paths of its completion table) has a golden `--help` here.
    @Test func everyCommandHasAGoldenHelp() async throws {
        let binary = try GracefulShutdownTests.executable()
        let script = try await run(binary, args: ["completion", "bash"]).stdoutText
        let paths = script.matches(of: #/\n\s+"([a-z -]+)"\)/#).map { String($0.output.1) }
        #expect(paths.count > 30, "\(script)")
        let pinned = Set(Self.commands.map { $0.joined(separator: " ") })
        #expect(Set(paths).subtracting(pinned).isEmpty, "no golden --help for \(Set(paths).subtracting(pinned))")
    }

    /// The global usage names every command group.
    @Test func globalUsageListsEveryCommand() async throws {
        let binary = try GracefulShutdownTests.executable()
        let global = try await run(binary, args: ["--help"])
        #expect(global.status == 0)
        for name in Set(Self.commands.map { $0[0] }) {
            #expect(global.stdoutText.contains("\n  \(name) "), "\(name) missing from the usage")
        }
    }

    /// Bad flags, values, operands and files: exit 2 with one line on standard error naming the problem, and
    /// nothing on standard output. (No server is needed: each fails before any request.)
    @Test func badFlagsAndFilesExitTwoWithOneLine() async throws {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("cli-bad")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notJSON = directory + "/bad.apns"
        try "not json".write(toFile: notJSON, atomically: true, encoding: .utf8)
        let noBundle = directory + "/nobundle.apns"
        try #"{"aps":{"alert":"hi"}}"#.write(toFile: noBundle, atomically: true, encoding: .utf8)
        let badTarget = directory + "/badtarget.apns"
        try #"{"Simulator Target Bundle":7,"aps":{}}"#.write(toFile: badTarget, atomically: true, encoding: .utf8)
        let device = String(repeating: "ab", count: 32)
        let emptyToken = directory + "/empty-token"
        try "\n".write(toFile: emptyToken, atomically: true, encoding: .utf8)
        let cert = directory + "/client"
        for file in [cert + ".pem", cert + "-key.pem"] { try "x".write(toFile: file, atomically: true, encoding: .utf8) }
        let cases: [([String], String)] = [
            (["devices", "add", "--nope"], "unknown option --nope"),
            (["devices", "list", "--limit"], "option --limit needs a value"),
            (["devices", "list", "--limit", "zero"], "--limit must be a whole number from 1 to 1000, not zero"),
            (["devices", "list", "--json=yes"], "option --json takes no value"),
            (["devices", "rm"], "expected 1 argument (<token>), got 0"),
            (["devices", "list", "extra"], "unexpected argument extra"),
            (["devices", "frobnicate"], "unknown subcommand frobnicate"),
            (["push", device, "com.example.app", directory + "/missing.apns"], "cannot read \(directory)/missing.apns"),
            (["push", device, "com.example.app", notJSON], "bad.apns is not a JSON object"),
            (["push", device, noBundle], "no bundle id"),
            (["push", device, badTarget], "\"Simulator Target Bundle\" must be a bundle id"),
            (["push", device, "com.example.app", noBundle, "--type", "shout"], "--type must be one of alert,"),
            (["push", device, "com.example.app", noBundle, "--priority", "7"], "--priority must be one of 10, 5, 1"),
            (["push", device, "com.example.app", noBundle, "--apns-id", "nope"], "--apns-id must be a UUID"),
            (["push", device, "com.example.app", noBundle, "--url", "ftp://x"], "--url must be an http:// or https:// URL"),
            (["clock", "advance", "soon"], "seconds must be a non-negative number, not soon"),
            (["reset", "--team", "T", "--device", "D"], "give at most one of"),
            (["snapshot", "load", directory + "/missing.json"], "cannot read"),
            (["keys", "create"], "--team is required"),
            (["keys", "create", "--team", "bad team"], "--team must be letters and digits"),
            (["devices", "list", "--admin-token-file", directory + "/none"], "cannot read the admin token file"),
            (["token", "--nope", "x"], "apns-sandbox: token: unknown option --nope (see apns-sandbox token --help)"),
            (["frobnicate"], "apns-sandbox: unknown command frobnicate (see apns-sandbox --help)"),
            (["completion", "fish"], "the shell must be bash or zsh"),
            (["devices", "list", "--timeout", "1e19"], "--timeout must be at most 86400 seconds, not 1e19"),
            (["push", device, "com.example.app", noBundle, "--wait-timeout", "5"], "--wait-timeout needs --wait"),
            (["push", device, "com.example.app", noBundle, "--token", "t", "--key-id", "K"], "--token and --key-id do not go together"),
            (["push", device, "com.example.app", noBundle, "--cert", cert, "--config", "c.json"], "--cert and --config do not go together"),
            (["push", device, "com.example.app", noBundle, "--cert", cert], "--cert needs --provider-url https://"),
            (["push", device, "com.example.app", noBundle, "--cert", cert, "--provider-url", "http://127.0.0.1:9"], "--cert needs --provider-url https://"),
            (["apps", "add", "com.example.other"], "--team is required"),
            (["devices", "list", "--admin-token-file", emptyToken], "the admin token file \(emptyToken) is empty"),
            (["devices", "list", "--ca", directory + "/none.pem"], "cannot read the CA file \(directory)/none.pem"),
            (["events", "--idle-timeout", "0"], "--idle-timeout must be more than 0 seconds"),
            (["version", "--bogus"], "apns-sandbox: version: unknown option --bogus"),
            (["version", "extra"], "apns-sandbox: version: unexpected argument extra"),
        ]
        for (arguments, message) in cases {
            let output = try await run(binary, args: arguments, environment: ["APNS_SANDBOX_URL": "http://127.0.0.1:9"])
            #expect(output.status == 2, "\(arguments): \(output)")
            #expect(output.stderrText.contains(message), "\(arguments): \(output)")
            #expect(output.stderrText.split(separator: "\n").count == 1, "\(arguments): not one line: \(output)")
            #expect(output.stdout.isEmpty, "\(arguments): \(output)")
        }
    }

    /// A sandbox that does not answer is a failed command (exit 1, one line), not a usage error.
    @Test func noServerIsExitOne() async throws {
        let binary = try GracefulShutdownTests.executable()
        let output = try await run(binary, args: ["devices", "list", "--url", "http://127.0.0.1:9", "--timeout", "5"])
        #expect(output.status == 1, "\(output)")
        #expect(output.stderrText.hasPrefix("apns-sandbox devices list: GET http://127.0.0.1:9/api/v1/devices"), "\(output)")
        #expect(output.stderrText.split(separator: "\n").count == 1)
    }

    /// The bash completion script completes commands, subcommands and each command's options (main.swift's
    /// own commands too), and leaves operands to the shell; zsh gets the same through bashcompinit.
    @Test func completionCompletesCommandsAndOptions() async throws {
        let binary = try GracefulShutdownTests.executable()
        let probe = """
            source <("$0" completion bash)
            t() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _apns_sandbox; echo "${COMPREPLY[*]}"; }
            t apns-sandbox dev
            t apns-sandbox devices ""
            t apns-sandbox devices add --of
            t apns-sandbox push abab com.example.app --wa
            t apns-sandbox serve --http
            t apns-sandbox push abab ""
            """
        let output = try await run("/bin/bash", args: ["-c", probe, binary])
        #expect(output.status == 0, "\(output)")
        #expect(output.stdoutText.split(separator: "\n", omittingEmptySubsequences: false) == [
            "devices", "list show add rm online offline install uninstall", "--offline", "--wait --wait-timeout",
            "--http-port", "", "",
        ], "\(output)")
        let zsh = try await run(binary, args: ["completion", "zsh"])
        #expect(zsh.status == 0 && zsh.stdoutText.contains("bashcompinit") && zsh.stdoutText.contains("complete -o default -F _apns_sandbox"))
        let fish = try await run(binary, args: ["completion", "fish"])
        #expect(fish.status == 2 && fish.stderrText.contains("bash or zsh"), "\(fish)")
    }
}
