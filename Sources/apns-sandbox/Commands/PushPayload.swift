// APNs Sandbox — what `push` sends: the payload of an `.apns` file, a JSON file or standard input.
import APNsProtocol
import Foundation

/// A push's payload and the bundle id it came with, from the file `xcrun simctl push` reads: a JSON
/// object, maybe with a top-level `"Simulator Target Bundle"` (the app), which is not sent.
struct PushPayload {
    static let targetBundleKey = "Simulator Target Bundle"

    /// The bytes sent as the request body.
    var body: [UInt8]
    /// `"Simulator Target Bundle"`, when the file has one.
    var targetBundle: String?
    var object: [String: Any]

    /// Reads `path` (`-`: standard input).
    init(path: String) throws {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read \(path)")
            }
            data = contents
        }
        let name = path == "-" ? "standard input" : path
        guard let parsed = try? JSONSerialization.jsonObject(with: data), let object = parsed as? [String: Any] else {
            throw UsageError("\(name) is not a JSON object")
        }
        var payload = object
        if let target = payload.removeValue(forKey: Self.targetBundleKey) {
            guard let bundle = target as? String, !bundle.isEmpty else {
                throw UsageError("\(name): \"\(Self.targetBundleKey)\" must be a bundle id")
            }
            targetBundle = bundle
            body = Array(try JSONSerialization.data(withJSONObject: payload, options: [.withoutEscapingSlashes]))
        } else {
            // Sent exactly as written.
            body = Array(data)
        }
        self.object = payload
    }

    /// `background` for a payload whose `aps` only wakes the app (`content-available` and nothing shown),
    /// else `alert`.
    var defaultPushType: String {
        guard let aps = object["aps"] as? [String: Any] else { return "alert" }
        let shown = ["alert", "sound", "badge"].contains { aps[$0] != nil }
        return !shown && (aps["content-available"] as? Int) == 1 ? "background" : "alert"
    }

    /// The topic of a push type: the bundle id, with the suffix APNs expects for it (``PushType/topicSuffix``).
    static func topic(bundleID: String, pushType: String) -> String {
        bundleID + (PushType(rawValue: pushType)?.topicSuffix ?? "")
    }

    /// Every `apns-push-type` value (``PushType``).
    static let pushTypes = PushType.allCases.map(\.rawValue)
}
