// APNs Sandbox — the command framework: what a command declares and how its usage reads.
import Foundation

/// One option of a command: `--name VALUE` when ``value`` names the value, else a switch (`--json`).
struct Option: Sendable {
    var name: String
    /// The value's placeholder in the usage (`URL`, `N`); nil for a switch.
    var value: String?
    var help: String

    init(_ name: String, _ value: String? = nil, _ help: String) {
        self.name = name
        self.value = value
        self.help = help
    }
}

/// A command (`push`) or a subcommand (`devices add`): its options, its operands and what it runs.
///
/// The runner parses the arguments against ``options`` (plus ``Option/server`` when ``usesServer``),
/// prints ``usage`` for `--help`, and turns a thrown ``UsageError`` into exit 2 and a ``CommandFailure``
/// into exit 1, each as one line on standard error.
struct Command: Sendable {
    /// The words that select it: `push`, `devices add`.
    var name: String
    /// The operands as the usage shows them: `<device> [<bundle-id>] <file|->`.
    var operands: String = ""
    /// How many operands it takes.
    var operandCount: ClosedRange<Int> = 0...0
    var summary: String
    var options: [Option] = []
    /// Talks to a running sandbox: takes `--url`, `--admin-token-file`, `--data-dir`, `--ca`, `--timeout`, `--json`.
    var usesServer = true
    /// Lines after the options (examples, exit codes).
    var notes: [String] = []
    var run: @Sendable (ParsedArguments) throws -> Int32

    /// Every option it accepts, the shared server ones last.
    var allOptions: [Option] { options + (usesServer ? Option.server : []) }

    /// `apns-sandbox <name> --help`.
    var usage: String {
        var text = "usage: apns-sandbox \(name) [options]\(operands.isEmpty ? "" : " " + operands)\n\n\(summary)\n"
        let options = allOptions
        if !options.isEmpty {
            text += "\noptions:\n"
            let width = options.map { $0.name.count + ($0.value.map { $0.count + 1 } ?? 0) }.max() ?? 0
            for option in options {
                let label = option.name + (option.value.map { " " + $0 } ?? "")
                text += "  " + label.padding(toLength: width + 2, withPad: " ", startingAt: 0) + option.help + "\n"
            }
        }
        if !notes.isEmpty { text += "\n" + notes.joined(separator: "\n") + "\n" }
        return text
    }
}

extension Option {
    /// The options of every command that talks to a running sandbox.
    static let server: [Option] = [
        Option("--url", "URL", "the sandbox (env APNS_SANDBOX_URL, default http://127.0.0.1:8080)"),
        Option("--admin-token-file", "FILE", "admin token file (default: env APNS_SANDBOX_ADMIN_TOKEN, else DIR/admin-token)"),
        Option("--data-dir", "DIR", "the server's data directory (env APNS_SANDBOX_DATA_DIR, default ./data)"),
        Option("--ca", "FILE", "CA certificate for https:// URLs (default DIR/ca.pem when it exists)"),
        Option("--timeout", "SECONDS", "give up after this long (default 30, at most 86400)"),
        Option("--json", nil, "print the server's JSON answer"),
    ]
}

/// A mistake in how the command was called (an unknown option, a bad value, an unreadable file): exit 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The command ran but did not succeed (no answer, an error answer, a rejected push): exit 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    var status: Int32
    init(_ description: String, status: Int32 = 1) {
        self.description = description
        self.status = status
    }
}
