// APNs Sandbox — choosing the command from the arguments, running it, and its exit status.
import Foundation

/// Runs the registered commands (``CommandRegistry/all``): finds the longest command name the arguments
/// start with, parses the rest, prints `--help`, and reports errors as one line on standard error.
enum CommandRunner {
    /// The command the arguments select and the arguments left for it, or nil when none matches.
    static func find(_ arguments: [String]) -> (Command, [String])? {
        var best: (command: Command, rest: [String], length: Int)?
        for command in CommandRegistry.all {
            let words = command.name.split(separator: " ").map(String.init)
            guard arguments.count >= words.count, Array(arguments.prefix(words.count)) == words else { continue }
            if words.count > best?.length ?? 0 {
                best = (command, Array(arguments.dropFirst(words.count)), words.count)
            }
        }
        return best.map { ($0.command, $0.rest) }
    }

    /// The subcommands of a group (`devices`), for its usage.
    static func group(_ name: String) -> [Command] {
        CommandRegistry.all.filter { $0.name.hasPrefix(name + " ") }
    }

    /// A group's usage: its subcommands with their summaries.
    static func groupUsage(_ name: String) -> String {
        let members = group(name)
        let width = members.map(\.name.count).max() ?? 0
        var text = "usage: apns-sandbox \(name) <subcommand> [options]\n\nsubcommands:\n"
        for member in members {
            text += "  " + member.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + member.summary + "\n"
        }
        return text + "\n`apns-sandbox \(name) <subcommand> --help` shows a subcommand's options.\n"
    }

    /// Runs what `arguments` select and exits; returns only when no registered command matches.
    static func runIfRegistered(_ arguments: [String]) {
        guard let first = arguments.first else { return }
        guard let (command, rest) = find(arguments) else {
            guard !group(first).isEmpty else { return }
            // A group alone, or with an unknown subcommand.
            let rest = arguments.dropFirst()
            if rest.isEmpty || rest.first == "--help" || rest.first == "-h" || rest.first == "help" {
                print(groupUsage(first), terminator: "")
                exit(0)
            }
            report("apns-sandbox \(first): unknown subcommand \(rest.first ?? "") (see apns-sandbox \(first) --help)")
            exit(2)
        }
        exit(run(command, rest))
    }

    /// Runs one command; its exit status.
    static func run(_ command: Command, _ arguments: [String]) -> Int32 {
        do {
            let parsed = try ParsedArguments(arguments, for: command)
            if parsed.wantsHelp {
                print(command.usage, terminator: "")
                return 0
            }
            return try command.run(parsed)
        } catch let error as UsageError {
            report("apns-sandbox \(command.name): \(error) (see apns-sandbox \(command.name) --help)")
            return 2
        } catch let error as CommandFailure {
            report("apns-sandbox \(command.name): \(error)")
            return error.status
        } catch {
            report("apns-sandbox \(command.name): \(error)")
            return 1
        }
    }

    /// One line on standard error.
    static func report(_ line: String) {
        FileHandle.standardError.write(Data((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    }
}
