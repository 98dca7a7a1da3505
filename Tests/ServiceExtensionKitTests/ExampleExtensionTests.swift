// APNs Sandbox — the example extension (Examples/NotificationService) run as the sandbox runs an `exec`
// extension: a child process with a clean environment, the request on stdin, the content on stdout.

import Foundation
import Testing

@Suite(.serialized) struct ExampleExtensionTests {
    static let bundleID = "com.example.app"

    /// An instance's directories: the working directory (TMPDIR) and the app group.
    struct Instance {
        let workingDirectory: URL
        let appGroup: URL

        init() throws {
            workingDirectory = try makeTemporaryDirectory("sek-instance")
            appGroup = try makeTemporaryDirectory("sek-group")
        }

        func remove() {
            try? FileManager.default.removeItem(at: workingDirectory)
            try? FileManager.default.removeItem(at: appGroup)
        }

        /// Starts the example as the sandbox would (docs/extension-protocol.md, "The process").
        func launch() throws -> ChildProcess {
            try ChildProcess(
                exampleExecutable(),
                environment: [
                    "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workingDirectory.path,
                    "TMPDIR": workingDirectory.path, "LANG": "C.UTF-8", "APNS_SANDBOX_APP_GROUP": appGroup.path,
                    "APNS_SANDBOX_INSTANCE": "test-instance",
                ],
                directory: workingDirectory)
        }

        /// A `request` line for an encrypted push.
        func requestLine(
            key: Data, encryptedData: String?, mediaURL: String?, locale: String = "en_US"
        ) throws -> String {
            var userInfo: [String: Any] = [
                "aps": ["alert": ["title": "New message", "body": "(encrypted)"], "mutable-content": 1, "badge": 2],
                "conversation": "c-42",
            ]
            if let encryptedData { userInfo["encrypted_data"] = encryptedData }
            if let mediaURL { userInfo["media-url"] = mediaURL }
            return try jsonLine([
                "type": "request", "identifier": "collapse-1", "apnsId": "8D2C1B0E-0000-4000-8000-000000000001",
                "bundleId": ExampleExtensionTests.bundleID, "appGroup": appGroup.path, "locale": locale,
                "keys": [ExampleExtensionTests.bundleID: key.base64EncodedString()],
                "content": [
                    "title": "New message", "body": "(encrypted)", "badge": 2, "sound": "default",
                    "interruptionLevel": "active", "userInfo": userInfo,
                ] as [String: Any],
            ])
        }
    }

    static func randomKey() -> Data {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) })
    }

    /// The `content` object of the first `content` line.
    static func content(of child: ChildProcess, timeout: Double) throws -> [String: Any] {
        guard let line = child.waitForStdoutLine(timeout: timeout, where: { $0.contains(#""type":"content""#) })
        else {
            throw TestFailure("no content line; stdout: \(child.stdoutText) stderr: \(child.stderrText)")
        }
        let message = try jsonObject(line)
        guard let content = message["content"] as? [String: Any] else { throw TestFailure("no content in \(line)") }
        return content
    }

    /// Decrypts, localizes (French table in the app group) and attaches the PNG from a local HTTP server.
    @Test func decryptsLocalizesAndAttachesMedia() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let media = try makeTemporaryDirectory("sek-media")
        defer { try? FileManager.default.removeItem(at: media) }
        try tinyPNG.write(to: media.appendingPathComponent("photo.png"))
        let server = try StaticHTTPServer(directory: media)
        defer { server.stop() }
        try Data(#"{"NEW_MESSAGE_FROM": "%1$@ vous a écrit : %2$@"}"#.utf8)
            .write(to: instance.appGroup.appendingPathComponent("Localizable.fr.json"))

        let key = Self.randomKey()
        let plaintext = try jsonLine([
            "title": "Alice", "loc-key": "NEW_MESSAGE_FROM", "loc-args": ["Alice", "On se voit à 8 h ?"],
            "message_id": "m-7",
        ])
        let sealed = try sealWithPython(plaintext, key: key)
        let child = try instance.launch()
        defer { child.kill() }
        try child.send(
            instance.requestLine(key: key, encryptedData: sealed, mediaURL: server.url("photo.png"), locale: "fr_FR"))

        let content = try Self.content(of: child, timeout: 20)
        #expect(content["title"] as? String == "Alice")
        #expect(content["body"] as? String == "Alice vous a écrit : On se voit à 8 h ?")
        #expect(content["badge"] as? Int == 2)
        #expect(content["sound"] as? String == "default")
        let userInfo = try #require(content["userInfo"] as? [String: Any])
        #expect(userInfo["message_id"] as? String == "m-7", "decrypted keys merge into userInfo")
        #expect(userInfo["conversation"] as? String == "c-42", "the payload's own keys stay")
        #expect(userInfo["encrypted_data"] == nil)
        #expect((userInfo["aps"] as? [String: Any])?["mutable-content"] as? Int == 1, "userInfo keeps aps")

        let attachments = try #require(content["attachments"] as? [[String: Any]])
        try #require(attachments.count == 1)
        #expect(attachments[0]["identifier"] as? String == "image")
        let url = try #require((attachments[0]["url"] as? String).flatMap(URL.init(string:)))
        #expect(url.isFileURL)
        #expect(url.path.hasPrefix(instance.workingDirectory.path), "written into the instance's directory")
        let file = try Data(contentsOf: url)
        #expect(Array(file.prefix(8)) == pngSignature)
        #expect(file == tinyPNG)

        #expect(child.waitForExit(timeout: 10) == 0)
        #expect(child.stdoutLines.count == 1, "stdout carries only the content line: \(child.stdoutText)")
    }

    /// With the download hanging, `timeWillExpire` makes it deliver the decrypted best attempt without media.
    @Test func timeWillExpireDeliversBestAttemptWhileTheDownloadHangs() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let server = try HangingHTTPServer()
        defer { server.stop() }
        let key = Self.randomKey()
        let sealed = try sealWithPython(try jsonLine(["title": "Bob", "body": "Lunch?"]), key: key)
        let child = try instance.launch()
        defer { child.kill() }
        try child.send(instance.requestLine(key: key, encryptedData: sealed, mediaURL: server.url("slow.jpg")))

        // Still downloading: no content yet, and the process stays small (the sandbox's exec limit is 64 MB).
        Thread.sleep(forTimeInterval: 1.0)
        #expect(child.stdoutLines.isEmpty, "content before timeWillExpire: \(child.stdoutText)")
        #expect(child.process.isRunning)
        if let rss = child.residentKilobytes {
            #expect(rss < 64 * 1024, "resident memory \(rss) kB")
        }

        let expiredAt = monotonicSeconds()
        try child.send(#"{"type":"timeWillExpire"}"#)
        let content = try Self.content(of: child, timeout: 5)
        #expect(monotonicSeconds() - expiredAt < 1.0, "best attempt within the grace period")
        #expect(content["title"] as? String == "Bob")
        #expect(content["body"] as? String == "Lunch?")
        #expect(content["attachments"] == nil)
        #expect(child.waitForExit(timeout: 5) == 0)
    }

    /// Data that does not decrypt with the app's key: the original content, as Apple's guidance says; the
    /// extension's `print` goes to stderr, never into the protocol.
    @Test func decryptionFailureShowsTheOriginal() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let sealed = try sealWithPython(try jsonLine(["title": "Secret", "body": "Hidden"]), key: Self.randomKey())
        let child = try instance.launch()
        defer { child.kill() }
        try child.send(instance.requestLine(key: Self.randomKey(), encryptedData: sealed, mediaURL: nil))

        let content = try Self.content(of: child, timeout: 10)
        #expect(content["title"] as? String == "New message")
        #expect(content["body"] as? String == "(encrypted)")
        #expect((content["userInfo"] as? [String: Any])?["encrypted_data"] is String, "the original, unchanged")
        #expect(child.waitForExit(timeout: 5) == 0)
        #expect(child.stdoutLines.count == 1)
        #expect(child.stderrText.contains("could not decrypt"), "stderr: \(child.stderrText)")
    }

    /// A push without `encrypted_data` or media is handed back unchanged and at once.
    @Test func plainPushComesBackUnchanged() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let child = try instance.launch()
        defer { child.kill() }
        try child.send(instance.requestLine(key: Self.randomKey(), encryptedData: nil, mediaURL: nil))
        let content = try Self.content(of: child, timeout: 10)
        #expect(content["title"] as? String == "New message")
        #expect(content["interruptionLevel"] as? String == "active")
        #expect(child.waitForExit(timeout: 5) == 0)
    }

    /// A media URL that answers 404: delivered without the attachment.
    @Test func missingMediaIsLeftOut() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let media = try makeTemporaryDirectory("sek-media")
        defer { try? FileManager.default.removeItem(at: media) }
        let server = try StaticHTTPServer(directory: media)
        defer { server.stop() }
        let key = Self.randomKey()
        let sealed = try sealWithPython(try jsonLine(["body": "Only a body"]), key: key)
        let child = try instance.launch()
        defer { child.kill() }
        try child.send(instance.requestLine(key: key, encryptedData: sealed, mediaURL: server.url("gone.png")))
        let content = try Self.content(of: child, timeout: 20)
        #expect(content["title"] as? String == "New message", "no decrypted title: the original title stays")
        #expect(content["body"] as? String == "Only a body")
        #expect(content["attachments"] == nil)
        #expect(child.waitForExit(timeout: 5) == 0)
    }

    /// Standard input closing before any content (the sandbox ended the instance): exit 0, nothing written.
    @Test func inputClosingEndsTheProcess() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let server = try HangingHTTPServer()
        defer { server.stop() }
        let key = Self.randomKey()
        let sealed = try sealWithPython(try jsonLine(["title": "T", "body": "B"]), key: key)
        let child = try instance.launch()
        defer { child.kill() }
        try child.send(instance.requestLine(key: key, encryptedData: sealed, mediaURL: server.url("x.png")))
        Thread.sleep(forTimeInterval: 0.3)
        try child.closeInput()
        #expect(child.waitForExit(timeout: 5) == 0)
        #expect(child.stdoutLines.isEmpty)
    }

    /// Garbage instead of a request: a non-zero exit and a reason on stderr.
    @Test func badRequestExitsNonZero() throws {
        let instance = try Instance()
        defer { instance.remove() }
        let child = try instance.launch()
        defer { child.kill() }
        try child.send("this is not json")
        let status = child.waitForExit(timeout: 10)
        #expect(status != nil && status != 0)
        #expect(child.stdoutLines.isEmpty)
        #expect(child.stderrText.contains("not JSON"), "stderr: \(child.stderrText)")
    }
}
