// APNs Sandbox — the builtin steps that only transform content: decrypt, localize, rewrite.
import APNsProtocol
import Crypto
import Foundation
import Sandbox

extension BuiltinDriver {
    /// Why a content step failed (the text lands in the timeline).
    struct StepFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: decrypt

    /// Members of the plaintext that set content fields rather than `userInfo`.
    private static let plaintextContentKeys: Set<String> = ["title", "subtitle", "body", "aps", "badge", "sound",
                                                              "userInfo"]

    /// Opens the AES-256-GCM payload field `field` with the app's keychain key and applies the plaintext.
    static func decrypt(_ content: inout ExtensionContent, field: String, key: String?, bundleID: String) throws -> String? {
        guard let encoded = content.userInfo[field]?.string else {
            throw StepFailure("the payload has no \"\(field)\" string")
        }
        guard let key else { throw StepFailure("the device keychain holds no key for \(bundleID)") }
        guard let keyBytes = Base64.decode(key), keyBytes.count == AESGCM.keyLength else {
            throw StepFailure("the keychain key for \(bundleID) is not 32 bytes of base64")
        }
        guard let combined = Base64.decode(encoded) else { throw StepFailure("\"\(field)\" is not base64") }
        let plaintext: [UInt8]
        do {
            plaintext = try AESGCM.open(combined: combined, key: keyBytes)
        } catch let error as AESGCMError {
            throw StepFailure("AES-GCM: \(error.reason.rawValue)")
        }
        guard let object = try? JSON.parse(plaintext), let members = object.members else {
            throw StepFailure("the plaintext is not a JSON object")
        }
        let alert = object["aps"]?["alert"]
        var set: [String] = []
        for (name, path) in [("title", \ExtensionContent.title), ("subtitle", \.subtitle), ("body", \.body)] {
            let value = object[name]?.string ?? alert?[name]?.string ?? (name == "body" ? alert?.string : nil)
            if let value {
                content[keyPath: path] = value
                set.append(name)
            }
        }
        if let badge = object["badge"]?.int ?? object["aps"]?["badge"]?.int {
            content.badge = badge
            set.append("badge")
        }
        if let sound = object["sound"]?.string ?? object["aps"]?["sound"]?.string {
            content.sound = sound
            set.append("sound")
        }
        var merged: [String] = []
        for (name, value) in object["userInfo"]?.members ?? [] {
            content.userInfo.set(name, value)
            merged.append(name)
        }
        for (name, value) in members where !plaintextContentKeys.contains(name) {
            content.userInfo.set(name, value)
            merged.append(name)
        }
        var detail = set.isEmpty ? "decrypted \(plaintext.count) bytes" : "set " + set.joined(separator: ", ")
        if !merged.isEmpty { detail += "; merged into userInfo: " + merged.joined(separator: ", ") }
        return detail
    }

    // MARK: localize

    /// Resolves loc keys found in `userInfo`, and texts that are themselves keys of the app's strings.
    static func localize(_ content: inout ExtensionContent, strings: [String: [String: String]], locale: String)
        -> String?
    {
        let localizer = AlertLocalizer(strings: strings)
        var done: [String] = []
        let fields: [(String, WritableKeyPath<ExtensionContent, String?>, String, String)] = [
            ("title", \.title, "title-loc-key", "title-loc-args"),
            ("subtitle", \.subtitle, "subtitle-loc-key", "subtitle-loc-args"),
            ("body", \.body, "loc-key", "loc-args"),
        ]
        for (name, path, keyField, argsField) in fields {
            if let key = content.userInfo[keyField]?.string {
                var arguments: [String] = []
                if case .array(let items) = content.userInfo[argsField] { arguments = items.compactMap(\.text) }
                content[keyPath: path] = localizer.localize(key: key, arguments: arguments, locale: locale)
                done.append(name)
            } else if let text = content[keyPath: path], let format = localizer.format(forKey: text, locale: locale) {
                content[keyPath: path] = AlertLocalizer.format(format, arguments: [])
                done.append(name)
            }
        }
        return done.isEmpty ? "nothing to localize for \(locale)" : "localized \(done.joined(separator: ", ")) for \(locale)"
    }

    // MARK: rewrite

    /// Replaces title, subtitle and body by their templates (all rendered from the content before the step).
    static func rewrite(_ content: inout ExtensionContent, title: String?, subtitle: String?, body: String?) -> String? {
        let before = content
        var changed: [String] = []
        if let title {
            content.title = render(title, with: before)
            changed.append("title")
        }
        if let subtitle {
            content.subtitle = render(subtitle, with: before)
            changed.append("subtitle")
        }
        if let body {
            content.body = render(body, with: before)
            changed.append("body")
        }
        return changed.isEmpty ? "no templates" : "rewrote " + changed.joined(separator: ", ")
    }

    /// `{{title}}`, `{{subtitle}}`, `{{body}}` and `{{userInfo.a.b}}` (strings as they are, numbers and
    /// Booleans as text, anything else or missing as nothing); other `{{…}}` stay as written.
    static func render(_ template: String, with content: ExtensionContent) -> String {
        var output = ""
        var rest = Substring(template)
        while let open = rest.range(of: "{{") {
            output += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                output += rest[open.lowerBound...]
                return output
            }
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            switch name {
            case "title": output += content.title ?? ""
            case "subtitle": output += content.subtitle ?? ""
            case "body": output += content.body ?? ""
            default:
                if name.hasPrefix("userInfo.") {
                    var value: JSON? = content.userInfo
                    for component in name.dropFirst("userInfo.".count).split(separator: ".") {
                        value = value?[String(component)]
                    }
                    output += value?.text ?? ""
                } else {
                    output += rest[open.lowerBound..<close.upperBound]
                }
            }
            rest = rest[close.upperBound...]
        }
        output += rest
        return output
    }
}

/// Standard or URL-safe base64, padded or not, white space ignored.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var standard = String(text.unicodeScalars.compactMap { scalar -> Character? in
            switch scalar {
            case "-": "+"
            case "_": "/"
            case " ", "\n", "\r", "\t": nil
            default: Character(scalar)
            }
        })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
