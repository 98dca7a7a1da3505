// APNs Sandbox — ServiceExtensionKit: the JSON lines of docs/extension-protocol.md.

import Foundation

/// Reading and writing the `exec` protocol's messages (one JSON object per line).
enum WireFormat {
    struct ProtocolError: Error, CustomStringConvertible {
        let description: String
    }

    /// The `type` of a message line, or `nil` if the line is not a JSON object with a string `type`.
    static func messageType(of line: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { return nil }
        return object["type"] as? String
    }

    /// The request and the environment from a `{"type":"request",…}` line.
    static func parseRequest(
        _ line: Data, processEnvironment: ServiceExtensionEnvironment = .fromProcessEnvironment()
    ) throws -> (UNNotificationRequest, ServiceExtensionEnvironment) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: line)
        } catch {
            throw ProtocolError(description: "the first line is not JSON: \(error)")
        }
        guard let message = parsed as? [String: Any] else {
            throw ProtocolError(description: "the first line is not a JSON object")
        }
        guard message["type"] as? String == "request" else {
            throw ProtocolError(description: "expected a request message first, got type \(message["type"] ?? "none")")
        }
        let contentObject = message["content"] as? [String: Any] ?? [:]
        let content = UNNotificationContent(state: contentState(from: contentObject))
        let apnsID = message["apnsId"] as? String
        let identifier = message["identifier"] as? String ?? apnsID ?? UUID().uuidString
        let request = UNNotificationRequest(identifier: identifier, content: content, trigger: UNPushNotificationTrigger())

        var environment = processEnvironment
        environment.bundleIdentifier = message["bundleId"] as? String
        environment.apnsID = apnsID
        if let appGroup = message["appGroup"] as? String, !appGroup.isEmpty {
            environment.appGroupURL = URL(fileURLWithPath: appGroup, isDirectory: true)
        }
        if let locale = message["locale"] as? String, !locale.isEmpty {
            environment.locale = Locale(identifier: locale)
        }
        var keys: [String: Data] = [:]
        for (name, value) in message["keys"] as? [String: Any] ?? [:] {
            if let text = value as? String, let key = Data(base64Encoded: text) { keys[name] = key }
        }
        environment.keys = keys
        return (request, environment)
    }

    /// `UNNotificationContent` as iOS builds it; absent fields keep their defaults.
    static func contentState(from object: [String: Any]) -> ContentState {
        var state = ContentState()
        state.title = object["title"] as? String ?? ""
        state.subtitle = object["subtitle"] as? String ?? ""
        state.body = object["body"] as? String ?? ""
        if let badge = object["badge"] as? NSNumber { state.badge = badge }
        state.sound = object["sound"].flatMap(UNNotificationSound.fromWire)
        state.threadIdentifier = object["threadIdentifier"] as? String ?? ""
        state.categoryIdentifier = object["categoryIdentifier"] as? String ?? ""
        state.targetContentIdentifier = object["targetContentIdentifier"] as? String
        state.interruptionLevel = (object["interruptionLevel"] as? String).flatMap(UNNotificationInterruptionLevel.init)
        state.relevanceScore = (object["relevanceScore"] as? NSNumber)?.doubleValue
        state.filterCriteria = object["filterCriteria"] as? String
        if let userInfo = object["userInfo"] as? [String: Any] {
            state.userInfo = Dictionary(uniqueKeysWithValues: userInfo.map { (AnyHashable($0.key), $0.value) })
        }
        return state
    }

    /// The `content` message for `content`, as one line (newline included).
    static func contentLine(_ content: UNNotificationContent) throws -> Data {
        try line(["type": "content", "content": contentObject(content.snapshot)])
    }

    /// A `log` message line.
    static func logLine(_ message: String) -> Data {
        (try? line(["type": "log", "message": message])) ?? Data("{\"type\":\"log\",\"message\":\"?\"}\n".utf8)
    }

    /// The wire form of content: empty strings are omitted (absent), as the protocol says.
    static func contentObject(_ state: ContentState) -> [String: Any] {
        var object: [String: Any] = [:]
        func put(_ key: String, _ text: String?) {
            if let text, !text.isEmpty { object[key] = text }
        }
        put("title", state.title)
        put("subtitle", state.subtitle)
        put("body", state.body)
        if let badge = state.badge { object["badge"] = badge.intValue }
        put("sound", state.sound?.wireValue)
        put("threadIdentifier", state.threadIdentifier)
        put("categoryIdentifier", state.categoryIdentifier)
        put("targetContentIdentifier", state.targetContentIdentifier)
        put("interruptionLevel", state.interruptionLevel?.wireValue)
        if let score = state.relevanceScore, score.isFinite { object["relevanceScore"] = score }
        put("filterCriteria", state.filterCriteria)
        object["userInfo"] = JSONCompatible.dictionary(state.userInfo)
        if !state.attachments.isEmpty {
            object["attachments"] = state.attachments.map { attachment -> [String: Any] in
                var entry: [String: Any] = ["identifier": attachment.identifier, "url": attachment.url.absoluteString]
                if let hint = attachment.typeHint { entry["options"] = ["typeHint": hint] }
                return entry
            }
        }
        return object
    }

    private static func line(_ object: [String: Any]) throws -> Data {
        var data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        data.append(0x0A)
        return data
    }
}
