// APNs Sandbox — every command that runs through the command framework, and the global usage's lines for them.

/// The commands ``CommandRunner`` knows (`serve`, `token`, `client-cert`, `healthcheck` and `version` are
/// main.swift's own).
enum CommandRegistry {
    static let all: [Command] = [push] + devices + apps + [reset] + clock + faults + snapshot + keys + [events, completion]

    /// The lines of the global usage: one per command or group.
    static var overview: String {
        let groups: [(String, String)] = [
            ("push", "send a notification through the provider API (--wait: what was displayed)"),
            ("devices", "list, show, add, rm, online, offline, install, uninstall"),
            ("apps", "list, show, add"),
            ("reset", "back to what the configuration seeds"),
            ("clock", "show, freeze, resume, real, advance, set"),
            ("faults", "list, add, rm, clear"),
            ("snapshot", "save, load"),
            ("keys", "create (offline): a new ES256 key for a team"),
            ("events", "follow the live event stream"),
            ("completion", "bash|zsh: a shell completion script"),
        ]
        return groups.map { "  " + $0.0.padding(toLength: 14, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n")
    }
}
