// APNs Sandbox — `completion bash|zsh`: shell completion of commands, subcommands and options.
import Foundation

extension CommandRegistry {
    static let completion = Command(
        name: "completion", operands: "<bash|zsh>", operandCount: 1...1,
        summary: "Prints a shell completion script: commands, subcommands and each one's options.",
        usesServer: false,
        notes: [
            "bash: source <(apns-sandbox completion bash)",
            "zsh:  source <(apns-sandbox completion zsh)   (after compinit; uses bashcompinit)",
        ],
        run: { arguments in
            guard ["bash", "zsh"].contains(arguments.operands[0]) else {
                throw UsageError("the shell must be bash or zsh, not \(arguments.operands[0])")
            }
            print(CompletionScript.bash(zsh: arguments.operands[0] == "zsh"), terminator: "")
            return 0
        })
}

/// The completion script, made from the registered commands and main.swift's own usages.
enum CompletionScript {
    /// Command paths ("" for the top level, "devices" for a group, "devices add") and what follows them.
    static var table: [(path: String, words: [String])] {
        var rows: [(String, [String])] = []
        var groups: [String] = []
        for command in CommandRegistry.all {
            let words = command.name.split(separator: " ").map(String.init)
            if words.count > 1, !groups.contains(words[0]) { groups.append(words[0]) }
            rows.append((command.name, command.allOptions.map(\.name) + ["--help"]))
        }
        for group in groups {
            rows.append((group, CommandRegistry.all.compactMap { command in
                command.name.hasPrefix(group + " ") ? String(command.name.dropFirst(group.count + 1)) : nil
            }))
        }
        for (name, text) in BuiltinUsages.all {
            let flags = text.matches(of: #/--[a-z][a-z-]*/#).map { String($0.output) }
            rows.append((name, Array(Set(flags)).sorted() + ["--help"]))
        }
        let top = BuiltinUsages.all.map(\.name) + groups
            + CommandRegistry.all.map(\.name).filter { !$0.contains(" ") } + ["help"]
        rows.append(("", top))
        return rows
    }

    static func bash(zsh: Bool) -> String {
        var cases = ""
        let rows = table
        let paths = "|" + rows.map(\.path).filter { !$0.isEmpty }.joined(separator: "|") + "|"
        for (path, words) in rows {
            cases += "        \"\(path)\") words=\"\(words.joined(separator: " "))\" ;;\n"
        }
        return """
            # apns-sandbox completion (\(zsh ? "zsh, through bashcompinit" : "bash"))
            \(zsh ? "autoload -U +X bashcompinit && bashcompinit\n" : "")_apns_sandbox() {
                local cur="${COMP_WORDS[COMP_CWORD]}" path="" word i
                local paths="\(paths)"
                # The command path typed so far: the words before the cursor that extend a known command.
                for ((i = 1; i < COMP_CWORD; i++)); do
                    word="${path:+$path }${COMP_WORDS[i]}"
                    [[ "$paths" == *"|$word|"* ]] && path="$word"
                done
                local words=""
                case "$path" in
            \(cases)    esac
                # A command's operands (tokens, files) are left to the shell's own completion.
                [[ "$cur" != -* && "$words" == --* ]] && return 0
                COMPREPLY=($(compgen -W "$words" -- "$cur"))
            }
            complete -o default -F _apns_sandbox apns-sandbox

            """
    }
}
