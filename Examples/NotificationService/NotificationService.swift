// APNs Sandbox — example notification service extension, written as for iOS.
//
// What it does with a push that has `mutable-content: 1`:
//   1. Decrypts `encrypted_data` (base64 of nonce(12) | ciphertext | tag(16), AES-256-GCM with the app's key
//      from the device keychain). The plaintext is a JSON object: `title`, `subtitle`, `body` replace the alert
//      text (missing ones keep the original); every other key is merged into `userInfo`. If it cannot decrypt,
//      it shows the original notification, as Apple recommends.
//   2. Localizes: if the decrypted JSON has `loc-key` / `loc-args` (body), `title-loc-key` / `title-loc-args` or
//      `subtitle-loc-key` / `subtitle-loc-args`, it looks the key up in `Localizable.<locale>.json`, then
//      `Localizable.<language>.json`, then `Localizable.en.json` in the app group (a flat JSON object of
//      format strings with `%@` / `%1$@`), and shows the key itself if no table has it, as iOS does.
//   3. Downloads `media-url` (or `media_url`) with URLSession and attaches it (image, audio or video).
//   When time runs out it delivers what it has so far (decrypted, without the media).
//
// Compared with the iOS original only the imports differ: `ServiceExtensionKit` instead of `UserNotifications`,
// FoundationNetworking for URLSession on Linux, and the two iOS-only services it uses — the keychain and the
// app's locale — come from `ServiceExtensionEnvironment` (see `appKey()` and `deviceLocale()` below).

import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import ServiceExtensionKit

class NotificationService: UNNotificationServiceExtension {
    /// The app-group identifier (on iOS, from the entitlements). The sandbox maps every group to the app's one
    /// app-group directory.
    static let appGroupIdentifier = "group.com.example.app"

    // didReceive and serviceExtensionTimeWillExpire run on different threads, so guard the two properties.
    private let lock = NSLock()
    private var _contentHandler: (@Sendable (UNNotificationContent) -> Void)?
    private var _bestAttemptContent: UNMutableNotificationContent?

    var contentHandler: (@Sendable (UNNotificationContent) -> Void)? {
        get { lock.withLock { _contentHandler } }
        set { lock.withLock { _contentHandler = newValue } }
    }
    var bestAttemptContent: UNMutableNotificationContent? {
        get { lock.withLock { _bestAttemptContent } }
        set { lock.withLock { _bestAttemptContent = newValue } }
    }

    override func didReceive(
        _ request: UNNotificationRequest,
        withContentHandler contentHandler: @escaping @Sendable (UNNotificationContent) -> Void
    ) {
        self.contentHandler = contentHandler
        guard let bestAttemptContent = request.content.mutableCopy() as? UNMutableNotificationContent else {
            contentHandler(request.content)
            return
        }
        self.bestAttemptContent = bestAttemptContent

        // 1. Decrypt.
        if let encrypted = bestAttemptContent.userInfo["encrypted_data"] as? String {
            guard let payload = decryptPayload(encrypted) else {
                // Apple: if you cannot decrypt, deliver the original content.
                print("NotificationService: could not decrypt encrypted_data; showing the original")
                contentHandler(request.content)
                return
            }
            apply(payload, to: bestAttemptContent)
        }

        // 2. Download and attach the media, if any.
        let userInfo = bestAttemptContent.userInfo
        guard let mediaString = (userInfo["media-url"] ?? userInfo["media_url"]) as? String,
            let mediaURL = URL(string: mediaString)
        else {
            contentHandler(bestAttemptContent)
            return
        }
        downloadAttachment(from: mediaURL) { attachment in
            if let attachment {
                bestAttemptContent.attachments = [attachment]
            }
            contentHandler(bestAttemptContent)
        }
    }

    override func serviceExtensionTimeWillExpire() {
        // Called just before the extension is terminated: deliver the best attempt (decrypted, maybe no media).
        if let contentHandler = contentHandler, let bestAttemptContent = bestAttemptContent {
            contentHandler(bestAttemptContent)
        }
    }

    // MARK: - Decryption

    /// The decrypted JSON object, or nil if the key is missing or the data does not decrypt to a JSON object.
    private func decryptPayload(_ base64: String) -> [String: Any]? {
        guard let sealed = Data(base64Encoded: base64), let key = appKey() else { return nil }
        do {
            let plaintext = try AESGCM.open(combined: sealed, key: key)
            return try JSONSerialization.jsonObject(with: plaintext) as? [String: Any]
        } catch {
            print("NotificationService: decryption failed: \(error)")
            return nil
        }
    }

    /// Sets the alert text from the decrypted payload and merges the other keys into userInfo.
    private func apply(_ payload: [String: Any], to content: UNMutableNotificationContent) {
        let strings = LocalizedStrings(appGroup: appGroupURL(), locale: deviceLocale())

        if let title = strings.text(payload, key: "title") { content.title = title }
        if let subtitle = strings.text(payload, key: "subtitle") { content.subtitle = subtitle }
        if let body = strings.text(payload, key: "body", locKey: "loc-key", locArgs: "loc-args") {
            content.body = body
        }

        var userInfo = content.userInfo
        userInfo.removeValue(forKey: "encrypted_data")
        let alertKeys: Set<String> = [
            "title", "subtitle", "body", "loc-key", "loc-args", "title-loc-key", "title-loc-args",
            "subtitle-loc-key", "subtitle-loc-args",
        ]
        for (key, value) in payload where !alertKeys.contains(key) {
            userInfo[key] = value
        }
        content.userInfo = userInfo
    }

    /// The app's AES key. iOS: `SecItemCopyMatching` in the shared keychain group.
    private func appKey() -> Data? {
        ServiceExtensionEnvironment.current.appKey
    }

    /// iOS: `Locale.current` of the extension process.
    private func deviceLocale() -> Locale {
        ServiceExtensionEnvironment.current.locale
    }

    private func appGroupURL() -> URL? {
        FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.appGroupIdentifier)
    }

    // MARK: - Media

    /// Downloads `url` into the temporary directory (with a file extension, so the attachment knows its type)
    /// and makes an attachment of it; nil on any failure.
    private func downloadAttachment(
        from url: URL, completion: @escaping @Sendable (UNNotificationAttachment?) -> Void
    ) {
        let task = URLSession.shared.downloadTask(with: url) { localURL, response, error in
            guard let localURL = localURL, error == nil else {
                print("NotificationService: media download failed: \(error.map { "\($0)" } ?? "no file")")
                completion(nil)
                return
            }
            if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
                print("NotificationService: media download answered HTTP \(http.statusCode)")
                completion(nil)
                return
            }
            let fileExtension = url.pathExtension.isEmpty
                ? NotificationService.fileExtension(forMIMEType: response?.mimeType) : url.pathExtension
            let fileURL = FileManager.default.temporaryDirectory
                .appendingPathComponent(UUID().uuidString)
                .appendingPathExtension(fileExtension)
            do {
                try FileManager.default.moveItem(at: localURL, to: fileURL)
                let attachment = try UNNotificationAttachment(identifier: "image", url: fileURL, options: nil)
                completion(attachment)
            } catch {
                print("NotificationService: could not attach \(url): \(error)")
                completion(nil)
            }
        }
        task.resume()
    }

    static func fileExtension(forMIMEType mimeType: String?) -> String {
        switch mimeType?.lowercased() {
        case "image/png": "png"
        case "image/gif": "gif"
        case "audio/mpeg", "audio/mp3": "mp3"
        case "audio/mp4", "audio/x-m4a", "audio/aac": "m4a"
        case "audio/wav", "audio/x-wav", "audio/wave": "wav"
        case "audio/aiff", "audio/x-aiff": "aiff"
        case "video/mp4": "mp4"
        case "video/mpeg": "mpg"
        case "video/x-msvideo", "video/avi": "avi"
        default: "jpg"
        }
    }
}

/// Localized alert strings from `Localizable.<locale>.json` files in the app group.
///
/// iOS would use the app bundle's `Localizable.strings`; an `exec` extension has no bundle, so the tables are
/// flat JSON objects (`{"NEW_MESSAGE": "%@ sent you a message"}`) the app (or the test) puts in the app group.
struct LocalizedStrings {
    private let tables: [[String: String]]

    init(appGroup: URL?, locale: Locale) {
        var names: [String] = [locale.identifier]
        if let language = locale.language.languageCode?.identifier { names.append(language) }
        names.append("en")
        var seen = Set<String>()
        tables = names.filter { seen.insert($0).inserted }.compactMap { name in
            guard let appGroup,
                let data = try? Data(contentsOf: appGroup.appendingPathComponent("Localizable.\(name).json"))
            else { return nil }
            return (try? JSONSerialization.jsonObject(with: data)) as? [String: String]
        }
    }

    /// The text for an alert field: `<key>-loc-key` (or `locKey`) formatted with its args if present, else the
    /// plain `key`, else nil (keep the original).
    func text(_ payload: [String: Any], key: String, locKey: String? = nil, locArgs: String? = nil) -> String? {
        let locKeyName = locKey ?? "\(key)-loc-key"
        let locArgsName = locArgs ?? "\(key)-loc-args"
        if let localizationKey = payload[locKeyName] as? String {
            let arguments = (payload[locArgsName] as? [Any] ?? []).map { "\($0)" }
            let format = tables.lazy.compactMap { $0[localizationKey] }.first ?? localizationKey
            return Self.format(format, arguments)
        }
        if let text = payload[key] as? String, !text.isEmpty { return text }
        return nil
    }

    /// Substitutes `%@` (in order) and `%n$@` (by position); `%%` is a percent sign.
    static func format(_ format: String, _ arguments: [String]) -> String {
        var result = ""
        var nextArgument = 0
        var characters = format[...]
        while let percent = characters.firstIndex(of: "%") {
            result += characters[..<percent]
            var rest = characters[characters.index(after: percent)...]
            if rest.first == "%" {
                result += "%"
                characters = rest.dropFirst()
                continue
            }
            let digits = rest.prefix { $0.isNumber }
            var position: Int?
            if !digits.isEmpty, rest.dropFirst(digits.count).first == "$" {
                position = Int(digits).map { $0 - 1 }
                rest = rest.dropFirst(digits.count + 1)
            }
            if rest.first == "@" {
                let index = position ?? nextArgument
                if position == nil { nextArgument += 1 }
                result += index >= 0 && index < arguments.count ? arguments[index] : ""
                characters = rest.dropFirst()
            } else {
                result += "%"
                characters = characters[characters.index(after: percent)...]
            }
        }
        result += characters
        return result
    }
}
