// APNs Sandbox — `push`: one notification through the provider API, as `xcrun simctl push` sends one.
import Foundation
import Server

extension CommandRegistry {
    static let push = Command(
        name: "push", operands: "<device> [<bundle-id>] <file.apns|payload.json|->", operandCount: 2...3,
        summary: """
            Sends a notification to a device through the provider API (POST /3/device/<device>) and prints
            APNs' answer. The bundle id may come from the .apns file's "Simulator Target Bundle" key.
            """,
        options: [
            Option("--type", "TYPE", "apns-push-type (default alert; background for a content-available-only payload)"),
            Option("--priority", "N", "apns-priority: 10, 5 or 1 (default: APNs' own)"),
            Option("--expiration", "SECONDS", "apns-expiration, UNIX time (0: now or never)"),
            Option("--collapse-id", "ID", "apns-collapse-id"),
            Option("--apns-id", "UUID", "apns-id (default: a new UUID)"),
            Option("--topic", "TOPIC", "apns-topic (default: the bundle id, with .voip etc. for the push type)"),
            Option("--environment", "ENV", "development|production (default: the listener's)"),
            Option("--token", "JWT", "the provider token to send (default: signed with --config's key)"),
            Option("--config", "FILE", "configuration whose key signs (default APNS_SANDBOX_CONFIG, else config/sandbox.json)"),
            Option("--key-id", "ID", "which key of the configuration signs"),
            Option("--cert", "PREFIX", "authenticate with a client certificate: PREFIX.pem and PREFIX-key.pem"),
            Option("--provider-url", "URL", "the provider API (default --url; an https:// one for --cert)"),
            Option("--wait", nil, "wait until the notification is final; print what was displayed"),
            Option("--wait-timeout", "SECONDS", "how long --wait waits (default 10, at most 300)"),
        ],
        notes: [
            "Without --token or --cert, and with no configuration file, the token comes from the server",
            "(POST /api/v1/provider-tokens).",
            "exit status: 0 accepted (with --wait: displayed or delivered silently), 1 rejected or no answer,",
            "2 bad arguments or payload file, 3 with --wait: expired, discarded or not final in time.",
        ],
        run: runPush)

    static func runPush(_ arguments: ParsedArguments) throws -> Int32 {
        let device = arguments.operands[0]
        let path = arguments.operands[arguments.operands.count - 1]
        let payload = try PushPayload(path: path)
        let given = arguments.operands.count == 3 ? arguments.operands[1] : nil
        guard let bundleID = given ?? payload.targetBundle else {
            throw UsageError("no bundle id: give one or put \"\(PushPayload.targetBundleKey)\" in \(path)")
        }
        let pushType = try arguments.choice("--type", PushPayload.pushTypes) ?? payload.defaultPushType
        let priority = try arguments.choice("--priority", ["10", "5", "1"])
        let expiration = try arguments.integer("--expiration", in: 0...Int64(UInt32.max))
        let environment = try arguments.choice("--environment", ["development", "production"])
        let apnsID = (arguments.value("--apns-id") ?? UUID().uuidString).lowercased()
        guard UUID(uuidString: apnsID) != nil else { throw UsageError("--apns-id must be a UUID, not \(apnsID)") }
        let waitSeconds = try arguments.seconds("--wait-timeout", atMost: 300) ?? 10
        try arguments.requires("--wait", for: "--wait-timeout")
        try arguments.atMostOne(of: ["--token", "--cert", "--config"])
        try arguments.atMostOne(of: ["--token", "--cert", "--key-id"])

        let api = try ServerConnection(arguments)
        var headers: [(String, String)] = [
            ("apns-topic", arguments.value("--topic") ?? PushPayload.topic(bundleID: bundleID, pushType: pushType)),
            ("apns-push-type", pushType), ("apns-id", apnsID),
        ]
        if let priority { headers.append(("apns-priority", priority)) }
        if let expiration { headers.append(("apns-expiration", "\(expiration)")) }
        if let collapseID = arguments.value("--collapse-id") { headers.append(("apns-collapse-id", collapseID)) }
        // Apple's host names pick the environment, as for a provider talking to Apple.
        if let environment {
            headers.append(("host", environment == "production" ? "api.push.apple.com" : "api.sandbox.push.apple.com"))
        }
        // The CA (--ca, else DIR/ca.pem) is ServerConnection's, for --url and --provider-url alike.
        let providerURL = arguments.value("--provider-url")
        let provider: ServerConnection
        if let prefix = arguments.value("--cert") {
            for file in [prefix + ".pem", prefix + "-key.pem"] where !FileManager.default.isReadableFile(atPath: file) {
                throw UsageError("cannot read \(file)")
            }
            // The cleartext listener never sees a client certificate: only the TLS one can check it.
            guard let providerURL, providerURL.lowercased().hasPrefix("https://") else {
                throw UsageError("--cert needs --provider-url https://HOST:PORT (the sandbox's TLS listener)")
            }
            provider = try ServerConnection(arguments, url: providerURL, clientCertificate: (prefix + ".pem", prefix + "-key.pem"))
        } else {
            headers.append(("authorization", "bearer \(try providerToken(arguments, api: api))"))
            provider = providerURL == nil ? api : try ServerConnection(arguments, url: providerURL)
        }
        let answer = try provider.send(
            "POST", "/3/device/\(ServerConnection.escape(device))", body: payload.body,
            headers: headers + [("content-type", "application/json")], admin: false)
        let reason = (try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])?["reason"] as? String
        var report: [String: Any] = ["status": answer.status, "apnsId": apnsID]
        if let reason { report["reason"] = reason }
        guard answer.status == 200 else {
            if arguments.json { try Output.json(report) } else {
                print("\(answer.status) \(reason ?? "") apns-id \(apnsID)")
            }
            return 1
        }
        guard arguments.has("--wait") else {
            if arguments.json { try Output.json(report) } else { print("200 accepted apns-id \(apnsID)") }
            return 0
        }
        let recordPath = "/notifications/\(apnsID)?device=\(ServerConnection.escape(device))&wait=\(waitSeconds)"
        // The request outlasts the server's wait.
        let record = try api.apiObject("GET", recordPath, atLeastMilliseconds: Int64(waitSeconds * 1000) + 5000)
        report["notification"] = record
        if arguments.json { try Output.json(report) } else {
            print("200 accepted apns-id \(apnsID)")
            PushReport.print(record)
        }
        let status = record["status"] as? String
        return record["final"] as? Bool == true && (status == "displayed" || status == "delivered-silent") ? 0 : 3
    }

    /// `--token`, else one signed with the configuration's key, else (no configuration file) one the server mints.
    static func providerToken(_ arguments: ParsedArguments, api: ServerConnection) throws -> String {
        if let token = arguments.value("--token") { return token }
        guard let path = ConfigurationFile.path(arguments.value("--config")) else {
            var body: [String: Any] = [:]
            if let keyID = arguments.value("--key-id") { body["keyId"] = keyID }
            let issued = try api.apiObject("POST", "/provider-tokens", json: body)
            guard let token = issued["token"] as? String else { throw CommandFailure("the server minted no token") }
            return token
        }
        do {
            let configuration = try SandboxConfiguration.load(path: path)
            return try CredentialTools.providerToken(configuration: configuration, keyID: arguments.value("--key-id"))
        } catch {
            throw UsageError("\(error)")
        }
    }
}

/// What `push --wait` prints of a final notification: status, outcome, the displayed content, the timeline.
enum PushReport {
    static func print(_ record: [String: Any]) {
        let displayed = record["displayed"] as? [String: Any] ?? [:]
        var pairs: [(String, String?)] = [
            ("status", Output.text(record["status"])), ("outcome", record["outcome"].map { Output.text($0) }),
        ]
        for key in ["title", "subtitle", "body", "badge", "sound", "threadId", "category", "interruptionLevel"] {
            pairs.append((key, displayed[key].map { Output.text($0) }))
        }
        if let attachments = displayed["attachments"] as? [[String: Any]], !attachments.isEmpty {
            pairs.append(("attachments", attachments.map { Output.text($0["identifier"]) }.joined(separator: ", ")))
        }
        pairs.append(("timeline", timeline(record["timeline"] as? [[String: Any]] ?? [])))
        Output.fields(pairs)
    }

    /// `accepted +0ms → displayed +4ms`: each step and its time after the first.
    static func timeline(_ entries: [[String: Any]]) -> String {
        let start = (entries.first?["monotonic"] as? NSNumber)?.int64Value ?? 0
        return entries.map { entry in
            // Monotonic nanoseconds.
            let offset = ((entry["monotonic"] as? NSNumber)?.int64Value ?? start) - start
            return "\(Output.text(entry["step"])) +\(offset / 1_000_000)ms"
        }.joined(separator: " → ")
    }
}
