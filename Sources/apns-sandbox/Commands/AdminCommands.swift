// APNs Sandbox — `reset`, `clock …`, `faults …` and `snapshot save|load`.
import Foundation

extension CommandRegistry {
    static let reset = Command(
        name: "reset", summary: "Puts the sandbox back to what its configuration seeds: all of it, or one team, app or device.",
        options: [
            Option("--team", "TEAM", "only this team's keys, apps and their data"),
            Option("--bundle-id", "ID", "only this app"),
            Option("--device", "TOKEN", "only this device"),
        ],
        run: { arguments in
            var request: [String: Any] = [:]
            for (flag, key) in [("--team", "teamId"), ("--bundle-id", "bundleId"), ("--device", "deviceToken")] {
                if let value = arguments.value(flag) { request[key] = value }
            }
            guard request.count <= 1 else { throw UsageError("give at most one of --team, --bundle-id, --device") }
            let body = try ServerConnection(arguments).api("POST", "/reset", json: request)
            if arguments.json { Output.json(body) } else { print("reset") }
            return 0
        })

    static let clock: [Command] = [
        clockCommand("show", summary: "Shows the sandbox's time and clock mode.", method: "GET", path: "") { _ in nil },
        clockCommand("freeze", summary: "Stops a virtual clock.") { _ in [:] },
        clockCommand("resume", summary: "Lets a frozen virtual clock run again.") { _ in [:] },
        clockCommand("real", summary: "Back to the real time.") { _ in [:] },
        clockCommand("advance", operands: "<seconds>", summary: "Moves a virtual clock forward (timers fall due).") { operands in
            guard let seconds = Double(operands[0]), seconds.isFinite, seconds >= 0 else {
                throw UsageError("seconds must be a non-negative number, not \(operands[0])")
            }
            return ["seconds": seconds]
        },
        clockCommand("set", operands: "<RFC3339|milliseconds>", summary: "Sets a virtual clock to an instant.") { operands in
            if let milliseconds = Int64(operands[0]) { return ["milliseconds": milliseconds] }
            return ["at": operands[0]]
        },
    ]

    private static func clockCommand(
        _ verb: String, operands: String = "", summary: String, method: String = "POST", path: String? = nil,
        body: @escaping @Sendable ([String]) throws -> [String: Any]?
    ) -> Command {
        Command(
            name: "clock \(verb)", operands: operands, operandCount: operands.isEmpty ? 0...0 : 1...1, summary: summary,
            run: { arguments in
                let answer = try ServerConnection(arguments).api(
                    method, "/clock" + (path ?? "/\(verb)"), json: try body(arguments.operands))
                if arguments.json { Output.json(answer); return 0 }
                let clock = try object(answer)
                Output.fields(["now", "mode", "virtual", "offsetMilliseconds"].map { ($0, Output.text(clock[$0])) })
                return 0
            })
    }

    static let faults: [Command] = [
        Command(
            name: "faults list", summary: "Lists the fault rules.",
            run: { arguments in
                let body = try ServerConnection(arguments).api("GET", "/faults")
                if arguments.json { Output.json(body); return 0 }
                Output.table(["ID", "STATE", "APPLIED", "MATCH", "ACTION"], try objects(body, "rules").map { rule in
                    ["id", "state", "applied", "match", "action"].map { Output.text(rule[$0]) }
                })
                return 0
            }),
        Command(
            name: "faults add", operands: "[<rule.json|->]", operandCount: 0...1,
            summary: "Adds a fault rule (docs/faults.md): a JSON rule from a file, or a preset.",
            options: [
                Option("--preset", "NAME", "a preset (outage, …) instead of a rule file"),
                Option("--duration", "SECONDS", "how long the preset lasts"),
            ],
            run: { arguments in
                var rule: [String: Any]
                if let file = arguments.operand(0) {
                    guard arguments.value("--preset") == nil else { throw UsageError("give a rule file or --preset, not both") }
                    rule = try PushPayload(path: file).object
                } else {
                    guard let preset = arguments.value("--preset") else { throw UsageError("give a rule file or --preset") }
                    rule = ["preset": preset]
                }
                if let duration = try arguments.seconds("--duration", atMost: 31_536_000) { rule["durationSeconds"] = duration }
                let body = try ServerConnection(arguments).api("POST", "/faults", json: rule)
                if arguments.json { Output.json(body) } else { print(Output.text(try object(body)["id"])) }
                return 0
            }),
        Command(
            name: "faults rm", operands: "<id>", operandCount: 1...1, summary: "Removes one fault rule.",
            run: { arguments in
                let id = arguments.operands[0]
                try ServerConnection(arguments).api("DELETE", "/faults/\(ServerConnection.escape(id))")
                if arguments.json { Output.json(Array("{}".utf8)) } else { print("removed \(id)") }
                return 0
            }),
        Command(
            name: "faults clear", summary: "Removes every fault rule.",
            run: { arguments in
                try ServerConnection(arguments).api("DELETE", "/faults")
                if arguments.json { Output.json(Array("{}".utf8)) } else { print("cleared") }
                return 0
            }),
    ]

    static let snapshot: [Command] = [
        Command(
            name: "snapshot save", operands: "[<file|->]", operandCount: 0...1,
            summary: "Writes the simulated world (devices, apps, keys, webhooks) as one JSON document (default: standard output).",
            options: [
                Option("--notifications", nil, "include the notification records"),
                Option("--secrets", nil, "include devices' keychain keys (webhook secrets are never exported)"),
            ],
            run: { arguments in
                let query = "notifications=\(arguments.has("--notifications"))&secrets=\(arguments.has("--secrets"))"
                let body = try ServerConnection(arguments).api("GET", "/snapshot?\(query)")
                guard let file = arguments.operand(0), file != "-" else {
                    Output.json(body)
                    return 0
                }
                do { try Data(body).write(to: URL(fileURLWithPath: file)) } catch {
                    throw UsageError("cannot write \(file): \(error.localizedDescription)")
                }
                if arguments.json { try Output.json(["file": file, "bytes": body.count]) } else { print(file) }
                return 0
            }),
        Command(
            name: "snapshot load", operands: "<file|->", operandCount: 1...1,
            summary: "Replaces the simulated world with a snapshot document (POST /api/v1/snapshot).",
            run: { arguments in
                let document = try PushPayload(path: arguments.operands[0])
                let answer = try ServerConnection(arguments).send("POST", "/api/v1/snapshot", body: document.body)
                guard (200..<300).contains(answer.status) else {
                    throw CommandFailure("POST /api/v1/snapshot: \(ServerConnection.errorText(answer))")
                }
                if arguments.json { Output.json(answer.body.isEmpty ? Array("{}".utf8) : answer.body) } else { print("loaded") }
                return 0
            }),
    ]
}
