// APNs Sandbox — `devices …` and `apps …`: the simulated world over the REST API.
import Foundation

extension CommandRegistry {
    static let devices: [Command] = [
        Command(
            name: "devices list", summary: "Lists the simulated devices (GET /api/v1/devices).",
            options: [Option("--limit", "N", "at most N devices (default 100)")],
            run: { arguments in
                let limit = try arguments.integer("--limit", in: 1...1000) ?? 100
                let api = try ServerConnection(arguments)
                let body = try api.api("GET", "/devices?limit=\(limit)")
                if arguments.json { Output.json(body); return 0 }
                let devices = try objects(body, "devices")
                Output.table(["TOKEN", "ENV", "LOCALE", "ONLINE", "APPS"], devices.map(deviceRow))
                return 0
            }),
        Command(
            name: "devices show", operands: "<token>", operandCount: 1...1, summary: "Shows one device.",
            run: { arguments in
                let api = try ServerConnection(arguments)
                let body = try api.api("GET", "/devices/\(ServerConnection.escape(arguments.operands[0]))")
                if arguments.json { Output.json(body) } else { printDevice(try object(body)) }
                return 0
            }),
        Command(
            name: "devices add", summary: "Creates a device (POST /api/v1/devices) and prints its token.",
            options: [
                Option("--token", "HEX", "its token (default: generated)"),
                Option("--environment", "ENV", "development|production (default development)"),
                Option("--locale", "LOCALE", "e.g. fr_FR (default en_US)"),
                Option("--apps", "A,B", "bundle ids of the apps installed"),
                Option("--offline", nil, "starts offline"),
            ],
            run: { arguments in
                var request: [String: Any] = [:]
                if let token = arguments.value("--token") { request["token"] = token }
                if let environment = try arguments.choice("--environment", ["development", "production"]) {
                    request["environment"] = environment
                }
                if let locale = arguments.value("--locale") { request["locale"] = locale }
                let apps = arguments.list("--apps")
                if !apps.isEmpty { request["apps"] = apps }
                if arguments.has("--offline") { request["online"] = false }
                let api = try ServerConnection(arguments)
                let body = try api.api("POST", "/devices", json: request)
                if arguments.json { Output.json(body) } else { print(Output.text(try object(body)["token"])) }
                return 0
            }),
        deviceChange("rm", summary: "Deletes a device.", method: "DELETE") { _ in nil },
        deviceChange("online", summary: "Brings a device online (what was stored is delivered).") { _ in ["online": true] },
        deviceChange("offline", summary: "Takes a device offline (pushes are stored).") { _ in ["online": false] },
        deviceChange("install", operands: "<token> <bundle-id>...", summary: "Installs apps on a device.") {
            ["installApps": Array($0.dropFirst())]
        },
        deviceChange("uninstall", operands: "<token> <bundle-id>...", summary: "Uninstalls apps (later pushes: 410 Unregistered).") {
            ["uninstallApps": Array($0.dropFirst())]
        },
    ]

    /// `devices <verb> <token> …`: one PATCH (or DELETE) of the device, then the device as it is now.
    private static func deviceChange(
        _ verb: String, operands: String = "<token>", summary: String, method: String = "PATCH",
        body: @escaping @Sendable ([String]) -> [String: Any]?
    ) -> Command {
        Command(
            name: "devices \(verb)", operands: operands, operandCount: operands == "<token>" ? 1...1 : 2...100,
            summary: summary,
            run: { arguments in
                let api = try ServerConnection(arguments)
                let token = arguments.operands[0]
                let answer = try api.api(method, "/devices/\(ServerConnection.escape(token))", json: body(arguments.operands))
                if arguments.json {
                    Output.json(answer.isEmpty ? Array("{}".utf8) : answer)
                } else if answer.isEmpty || method == "DELETE" {
                    print("deleted \(token)")
                } else {
                    printDevice(try object(answer))
                }
                return 0
            })
    }

    static func deviceRow(_ device: [String: Any]) -> [String] {
        let apps = (device["apps"] as? [[String: Any]] ?? []).filter { $0["uninstalledAt"] == nil || $0["uninstalledAt"] is NSNull }
        return [
            Output.text(device["token"]), Output.text(device["environment"]), Output.text(device["locale"]),
            Output.text(device["online"]), apps.map { Output.text($0["bundleId"]) }.joined(separator: ","),
        ]
    }

    static func printDevice(_ device: [String: Any]) {
        let row = deviceRow(device)
        Output.fields([("token", row[0]), ("environment", row[1]), ("locale", row[2]), ("online", row[3]), ("apps", row[4])])
    }

    static let apps: [Command] = [
        Command(
            name: "apps list", summary: "Lists the apps (GET /api/v1/apps).",
            run: { arguments in
                let body = try ServerConnection(arguments).api("GET", "/apps")
                if arguments.json { Output.json(body); return 0 }
                Output.table(["BUNDLE ID", "TEAM"], try objects(body, "apps").map {
                    [Output.text($0["bundleId"]), Output.text($0["teamId"])]
                })
                return 0
            }),
        Command(
            name: "apps show", operands: "<bundle-id>", operandCount: 1...1, summary: "Shows one app.",
            run: { arguments in
                let body = try ServerConnection(arguments).api("GET", "/apps/\(ServerConnection.escape(arguments.operands[0]))")
                if arguments.json { Output.json(body) } else {
                    let app = try object(body)
                    Output.fields([("bundleId", Output.text(app["bundleId"])), ("teamId", Output.text(app["teamId"]))])
                }
                return 0
            }),
        Command(
            name: "apps add", operands: "<bundle-id>", operandCount: 1...1, summary: "Creates an app (POST /api/v1/apps).",
            options: [Option("--team", "TEAM", "the team that owns it (required)")],
            run: { arguments in
                guard let team = arguments.value("--team"), !team.isEmpty else { throw UsageError("--team is required") }
                let request: [String: Any] = ["bundleId": arguments.operands[0], "teamId": team]
                let body = try ServerConnection(arguments).api("POST", "/apps", json: request)
                if arguments.json { Output.json(body) } else { print(Output.text(try object(body)["bundleId"])) }
                return 0
            }),
    ]

    /// A JSON object answer.
    static func object(_ body: [UInt8]) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw CommandFailure("the answer is not a JSON object")
        }
        return object
    }

    /// The array of objects under `key` of a JSON object answer.
    static func objects(_ body: [UInt8], _ key: String) throws -> [[String: Any]] {
        guard let list = try object(body)[key] as? [[String: Any]] else {
            throw CommandFailure("the answer has no \(key) list")
        }
        return list
    }
}
