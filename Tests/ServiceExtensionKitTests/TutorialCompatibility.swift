// APNs Sandbox — ServiceExtensionKit: NotificationService code as Apple's template and common tutorials write it
// must compile against ServiceExtensionKit with only the import lines changed.
//
// The classes below are compiled as part of this test target (Swift 6 language mode). With iOS they would start
// `import UserNotifications`; here the imports are ServiceExtensionKit and, for URLSession on Linux,
// FoundationNetworking. The Swift 6 language mode rejects capturing a plain `(UNNotificationContent) -> Void`
// closure in URLSession's `@Sendable` completion handler — with Apple's SDK as well — so the download tutorial
// spells the parameter `@escaping @Sendable`, the usual Swift 6 fix that Apple's SDK also accepts. The exact
// Swift 5 text (plain parameter) is type-checked by `verbatimSwift5TutorialTypeChecks` below.

import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import ServiceExtensionKit

// MARK: - Xcode's "Notification Service Extension" template, verbatim.

class TemplateNotificationService: UNNotificationServiceExtension {

    var contentHandler: ((UNNotificationContent) -> Void)?
    var bestAttemptContent: UNMutableNotificationContent?

    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        bestAttemptContent = (request.content.mutableCopy() as? UNMutableNotificationContent)

        if let bestAttemptContent = bestAttemptContent {
            // Modify the notification content here...
            bestAttemptContent.title = "\(bestAttemptContent.title) [modified]"

            contentHandler(bestAttemptContent)
        }
    }

    override func serviceExtensionTimeWillExpire() {
        // Called just before the extension will be terminated by the system.
        // Use this as an opportunity to deliver your "best attempt" at modified content, otherwise the original push payload will be used.
        if let contentHandler = contentHandler, let bestAttemptContent =  bestAttemptContent {
            contentHandler(bestAttemptContent)
        }
    }

}

// MARK: - A rich-notification tutorial: title prefix, image download with URLSession, attachment.

class TutorialNotificationService: UNNotificationServiceExtension {

    var contentHandler: ((UNNotificationContent) -> Void)?
    var bestAttemptContent: UNMutableNotificationContent?

    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping @Sendable (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        bestAttemptContent = (request.content.mutableCopy() as? UNMutableNotificationContent)

        guard let bestAttemptContent = bestAttemptContent else {
            contentHandler(request.content)
            return
        }

        bestAttemptContent.title = "[Rich] \(bestAttemptContent.title)"
        bestAttemptContent.sound = UNNotificationSound.default
        bestAttemptContent.badge = 1
        bestAttemptContent.threadIdentifier = "tutorial-thread"

        guard let imageURLString = bestAttemptContent.userInfo["image-url"] as? String,
              let imageURL = URL(string: imageURLString) else {
            contentHandler(bestAttemptContent)
            return
        }

        let task = URLSession.shared.downloadTask(with: imageURL) { (localURL, response, error) in
            if let error = error {
                print("Error downloading image: \(error.localizedDescription)")
                contentHandler(bestAttemptContent)
                return
            }
            guard let localURL = localURL else {
                contentHandler(bestAttemptContent)
                return
            }

            let tmpDirectory = FileManager.default.temporaryDirectory
            let tmpFile = tmpDirectory.appendingPathComponent(UUID().uuidString + ".png")

            do {
                try FileManager.default.moveItem(at: localURL, to: tmpFile)
                let attachment = try UNNotificationAttachment(identifier: "image", url: tmpFile, options: [UNNotificationAttachmentOptionsTypeHintKey: "public.png"])
                bestAttemptContent.attachments = [attachment]
            } catch {
                print("Error creating attachment: \(error)")
            }

            contentHandler(bestAttemptContent)
        }
        task.resume()
    }

    override func serviceExtensionTimeWillExpire() {
        if let contentHandler = contentHandler, let bestAttemptContent = bestAttemptContent {
            contentHandler(bestAttemptContent)
        }
    }
}

// MARK: - The tests

/// Collects what an extension hands to its content handler.
final class HandedContent: Sendable {
    private let received = Mutex<[UNNotificationContent]>([])

    var handler: @Sendable (UNNotificationContent) -> Void {
        { [self] content in received.withLock { $0.append(content) } }
    }

    func wait(timeout: Double) -> UNNotificationContent? {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if let first = received.withLock({ $0.first }) { return first }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return received.withLock { $0.first }
    }
}

func pushRequest(title: String, userInfo: [AnyHashable: Any]) -> UNNotificationRequest {
    let content = UNMutableNotificationContent()
    content.title = title
    content.body = "Body"
    content.userInfo = userInfo
    return UNNotificationRequest(identifier: "tutorial", content: content, trigger: nil)
}

@Suite struct TutorialCompatibilityTests {
    @Test func xcodeTemplateModifiesTheTitle() throws {
        let handed = HandedContent()
        TemplateNotificationService().didReceive(pushRequest(title: "Hello", userInfo: [:]), withContentHandler: handed.handler)
        let content = try #require(handed.wait(timeout: 1))
        #expect(content.title == "Hello [modified]")
        #expect(content.body == "Body")
    }

    /// The tutorial downloads the image from a local server and attaches it.
    @Test func tutorialDownloadsAndAttaches() throws {
        let media = try makeTemporaryDirectory("sek-media")
        defer { try? FileManager.default.removeItem(at: media) }
        try tinyPNG.write(to: media.appendingPathComponent("cat.png"))
        let server = try StaticHTTPServer(directory: media)
        defer { server.stop() }

        let handed = HandedContent()
        let request = pushRequest(title: "Cat", userInfo: ["image-url": server.url("cat.png")])
        TutorialNotificationService().didReceive(request, withContentHandler: handed.handler)
        let content = try #require(handed.wait(timeout: 20))
        #expect(content.title == "[Rich] Cat")
        #expect(content.badge == 1)
        #expect(content.sound == UNNotificationSound.default)
        try #require(content.attachments.count == 1)
        let attachment = content.attachments[0]
        #expect(attachment.identifier == "image" && attachment.type == "public.png")
        #expect(try Data(contentsOf: attachment.url) == tinyPNG)
        try? FileManager.default.removeItem(at: attachment.url)
    }

    /// The Swift 5 tutorial text — Apple's plain `@escaping (UNNotificationContent) -> Void`, the handler captured
    /// by URLSession's completion — type-checks in the Swift 5 language mode (Xcode's default for extension
    /// targets) against the built module, with only the import lines changed.
    @Test func verbatimSwift5TutorialTypeChecks() throws {
        let modules = buildProductsDirectory().appendingPathComponent("Modules")
        try #require(
            FileManager.default.fileExists(atPath: modules.appendingPathComponent("ServiceExtensionKit.swiftmodule").path),
            "ServiceExtensionKit.swiftmodule not found in \(modules.path)")
        let directory = try makeTemporaryDirectory("sek-swiftc")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("NotificationService.swift")
        try Data(Self.swift5Tutorial.utf8).write(to: source)
        let swiftc = try ChildProcess(
            "/usr/bin/env",
            arguments: [
                "swiftc", "-typecheck", "-swift-version", "5", "-I", modules.path,
                "-module-cache-path", directory.appendingPathComponent("cache").path, source.path,
            ])
        let status = swiftc.waitForExit(timeout: 120)
        #expect(status == 0, "swiftc: \(swiftc.stderrText)")
        #expect(!swiftc.stderrText.contains("error:"), "\(swiftc.stderrText)")
    }

    /// A widely copied tutorial NotificationService (Swift 5), as on iOS but for the import lines.
    static let swift5Tutorial = #"""
        import Foundation
        #if canImport(FoundationNetworking)
        import FoundationNetworking
        #endif
        import ServiceExtensionKit // was: import UserNotifications

        class NotificationService: UNNotificationServiceExtension {

            var contentHandler: ((UNNotificationContent) -> Void)?
            var bestAttemptContent: UNMutableNotificationContent?

            override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
                self.contentHandler = contentHandler
                bestAttemptContent = (request.content.mutableCopy() as? UNMutableNotificationContent)

                if let bestAttemptContent = bestAttemptContent {
                    bestAttemptContent.title = "\(bestAttemptContent.title) [modified]"

                    guard let urlImageString = request.content.userInfo["urlImageString"] as? String,
                          let url = URL(string: urlImageString) else {
                        contentHandler(bestAttemptContent)
                        return
                    }

                    downloadImageFrom(url: url) { attachment in
                        if let attachment = attachment {
                            bestAttemptContent.attachments = [attachment]
                        }
                        contentHandler(bestAttemptContent)
                    }
                }
            }

            override func serviceExtensionTimeWillExpire() {
                if let contentHandler = contentHandler, let bestAttemptContent =  bestAttemptContent {
                    contentHandler(bestAttemptContent)
                }
            }

            private func downloadImageFrom(url: URL, with completionHandler: @escaping (UNNotificationAttachment?) -> Void) {
                let task = URLSession.shared.downloadTask(with: url) { (downloadedUrl, response, error) in
                    guard let downloadedUrl = downloadedUrl else {
                        completionHandler(nil)
                        return
                    }
                    var urlPath = URL(fileURLWithPath: NSTemporaryDirectory())
                    let uniqueURLEnding = ProcessInfo.processInfo.globallyUniqueString + ".jpg"
                    urlPath = urlPath.appendingPathComponent(uniqueURLEnding)
                    try? FileManager.default.moveItem(at: downloadedUrl, to: urlPath)
                    do {
                        let attachment = try UNNotificationAttachment(identifier: "picture", url: urlPath, options: nil)
                        completionHandler(attachment)
                    } catch {
                        completionHandler(nil)
                    }
                }
                task.resume()
            }
        }
        """#
}
