// APNs Sandbox — ServiceExtensionKit: content, copies, sounds, attachments and the wire format.

import Foundation
import Testing

@testable import ServiceExtensionKit

@Suite struct ContentTests {
    /// `mutableCopy()` gives an independent `UNMutableNotificationContent` with the same values.
    @Test func mutableCopyIsIndependent() throws {
        let original = UNMutableNotificationContent()
        original.title = "Hello"
        original.badge = 3
        original.userInfo = ["k": "v"]
        let copy = try #require(original.mutableCopy() as? UNMutableNotificationContent)
        copy.title = "Changed"
        copy.userInfo["k"] = "w"
        #expect(original.title == "Hello")
        #expect(original.userInfo["k"] as? String == "v")
        #expect(copy.title == "Changed")
        #expect(copy.badge == 3)
        let frozen = original.copy() as? UNNotificationContent
        #expect(frozen != nil && !(frozen is UNMutableNotificationContent))
    }

    /// Defaults match Apple's: empty strings, `.active`, relevance 0, no sound.
    @Test func defaults() {
        let content = UNNotificationContent()
        #expect(content.title.isEmpty && content.subtitle.isEmpty && content.body.isEmpty)
        #expect(content.interruptionLevel == .active)
        #expect(content.relevanceScore == 0)
        #expect(content.sound == nil && content.badge == nil && content.attachments.isEmpty)
    }

    /// A request keeps its own copy of the content and reports a push trigger.
    @Test func requestCopiesContent() {
        let content = UNMutableNotificationContent()
        content.title = "A"
        let request = UNNotificationRequest(identifier: "r", content: content, trigger: UNPushNotificationTrigger())
        content.title = "B"
        #expect(request.content.title == "A")
        #expect(request.trigger is UNPushNotificationTrigger)
    }

    @Test func sounds() {
        #expect(UNNotificationSound.default.wireValue == "default")
        #expect(UNNotificationSound(named: UNNotificationSoundName("chime.caf")).wireValue == "chime.caf")
        #expect(UNNotificationSound(named: UNNotificationSoundName(rawValue: "a.aiff")) == UNNotificationSound(named: "a.aiff"))
        #expect(UNNotificationSound.criticalSoundNamed("alarm.caf", withAudioVolume: 0.5).wireValue == "alarm.caf")
        #expect(UNNotificationSound.fromWire(["critical": 1, "name": "x.caf", "volume": 0.8])?.isCritical == true)
    }

    /// The initializer throws like Apple's: missing file, unknown type, wrong hint, empty file.
    @Test func attachmentValidation() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let png = directory.appendingPathComponent("a.png")
        try tinyPNG.write(to: png)
        let noExtension = directory.appendingPathComponent("download")
        try tinyPNG.write(to: noExtension)
        let empty = directory.appendingPathComponent("empty.jpg")
        try Data().write(to: empty)

        let attachment = try UNNotificationAttachment(identifier: "image", url: png, options: nil)
        #expect(attachment.identifier == "image" && attachment.type == "public.png" && attachment.url == png)
        #expect(try UNNotificationAttachment(identifier: "", url: png).identifier.count == 36, "a generated UUID")

        let hinted = try UNNotificationAttachment(
            identifier: "h", url: noExtension, options: [UNNotificationAttachmentOptionsTypeHintKey: "public.png"])
        #expect(hinted.type == "public.png" && hinted.typeHint == "public.png")

        #expect { try UNNotificationAttachment(identifier: "x", url: noExtension, options: nil) } throws: {
            ($0 as? UNError)?.code == .attachmentUnrecognizedType
        }
        #expect { try UNNotificationAttachment(identifier: "x", url: directory.appendingPathComponent("no.png")) } throws: {
            ($0 as? UNError)?.code == .attachmentInvalidURL
        }
        #expect { try UNNotificationAttachment(identifier: "x", url: URL(string: "https://example.com/a.png")!) } throws: {
            ($0 as? UNError)?.code == .attachmentInvalidURL
        }
        #expect { try UNNotificationAttachment(identifier: "x", url: empty) } throws: {
            ($0 as? UNError)?.code == .attachmentInvalidFileSize
        }
        #expect {
            try UNNotificationAttachment(
                identifier: "x", url: png, options: [UNNotificationAttachmentOptionsTypeHintKey: "public.tiff"])
        } throws: { ($0 as? UNError)?.code == .attachmentUnrecognizedType }

        // `catch UNError.attachmentInvalidURL` works as with Apple's bridged errors.
        var caught = false
        do {
            _ = try UNNotificationAttachment(identifier: "x", url: directory.appendingPathComponent("none.gif"))
        } catch UNError.attachmentInvalidURL {
            caught = true
        } catch {}
        #expect(caught)
    }

    /// The request line becomes Apple's request: userInfo is the whole payload; keys are decoded.
    @Test func parsesTheRequestLine() throws {
        let line = #"{"type":"request","identifier":"c-1","apnsId":"A-1","bundleId":"com.example.app","#
            + #""appGroup":"/tmp/g","locale":"ja_JP","keys":{"com.example.app":"AAEC","bad":"%%"},"#
            + #""content":{"title":"T","subtitle":"S","body":"B","badge":4,"sound":"bell.caf","#
            + #""threadIdentifier":"th","categoryIdentifier":"cat","targetContentIdentifier":"tc","#
            + #""interruptionLevel":"time-sensitive","relevanceScore":0.25,"#
            + #""userInfo":{"aps":{"alert":{"title":"T"},"mutable-content":1},"custom":[1,2]}}}"#
        let (request, environment) = try WireFormat.parseRequest(Data(line.utf8))
        let content = request.content
        #expect(request.identifier == "c-1")
        #expect(content.title == "T" && content.subtitle == "S" && content.body == "B")
        #expect(content.badge?.intValue == 4)
        #expect(content.sound == UNNotificationSound(named: "bell.caf"))
        #expect(content.threadIdentifier == "th" && content.categoryIdentifier == "cat")
        #expect(content.targetContentIdentifier == "tc")
        #expect(content.interruptionLevel == .timeSensitive)
        #expect(content.relevanceScore == 0.25)
        #expect((content.userInfo["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
        #expect(content.userInfo["custom"] as? [Int] == [1, 2])
        #expect(environment.bundleIdentifier == "com.example.app" && environment.apnsID == "A-1")
        #expect(environment.appGroupURL?.path == "/tmp/g")
        #expect(environment.keys == ["com.example.app": Data([0, 1, 2])], "undecodable keys are skipped")
        #expect(environment.locale.identifier == "ja_JP")
    }

    /// Content goes out complete; empty text and unset optional fields are left out; attachments are file URLs.
    @Test func encodesTheContentLine() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let png = directory.appendingPathComponent("a.png")
        try tinyPNG.write(to: png)

        let content = UNMutableNotificationContent()
        content.title = "Title"
        content.badge = NSNumber(value: 7)
        content.sound = .default
        content.userInfo = ["aps": ["mutable-content": 1], "when": Date(timeIntervalSince1970: 0), 5: "five",
                            "blob": Data([1, 2]), "nothing": Optional<String>.none as Any]
        content.attachments = [
            try UNNotificationAttachment(
                identifier: "image", url: png, options: [UNNotificationAttachmentOptionsTypeHintKey: "public.png"]),
        ]
        let line = try WireFormat.contentLine(content)
        #expect(line.last == 0x0A)
        #expect(!line.dropLast().contains(0x0A), "exactly one line")
        let message = try jsonObject(String(decoding: line, as: UTF8.self))
        #expect(message["type"] as? String == "content")
        let object = try #require(message["content"] as? [String: Any])
        #expect(object["title"] as? String == "Title")
        #expect(object["body"] == nil && object["subtitle"] == nil && object["threadIdentifier"] == nil)
        #expect(object["interruptionLevel"] == nil && object["relevanceScore"] == nil)
        #expect(object["badge"] as? Int == 7)
        #expect(object["sound"] as? String == "default")
        let userInfo = try #require(object["userInfo"] as? [String: Any])
        #expect(userInfo["when"] as? String == "1970-01-01T00:00:00Z")
        #expect(userInfo["5"] as? String == "five")
        #expect(userInfo["blob"] as? String == "AQI=")
        #expect(userInfo["nothing"] is NSNull)
        let attachments = try #require(object["attachments"] as? [[String: Any]])
        #expect(attachments.count == 1)
        #expect(attachments[0]["url"] as? String == png.absoluteString)
        #expect((attachments[0]["options"] as? [String: Any])?["typeHint"] as? String == "public.png")

        content.interruptionLevel = .passive
        content.relevanceScore = 0.5
        let second = try jsonObject(String(decoding: try WireFormat.contentLine(content), as: UTF8.self))
        let secondContent = try #require(second["content"] as? [String: Any])
        #expect(secondContent["interruptionLevel"] as? String == "passive")
        #expect(secondContent["relevanceScore"] as? Double == 0.5)
    }

    /// A request's content round-trips unchanged (what an extension that changes nothing hands back).
    @Test func roundTrip() throws {
        let object: [String: Any] = [
            "title": "T", "body": "B", "badge": 1, "sound": "default", "interruptionLevel": "active",
            "relevanceScore": 0.5, "userInfo": ["aps": ["mutable-content": 1, "alert": ["body": "B"]], "flag": true],
        ]
        let line = try jsonLine(["type": "request", "identifier": "x", "content": object])
        let (request, _) = try WireFormat.parseRequest(Data(line.utf8))
        let out = try jsonObject(String(decoding: try WireFormat.contentLine(request.content), as: UTF8.self))
        let content = try #require(out["content"] as? [String: Any])
        #expect(try jsonLine(content) == jsonLine(object))
        #expect((content["userInfo"] as? [String: Any])?["flag"] as? Bool == true)
    }

    /// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)` answers with the app group.
    @Test func containerURLIsTheAppGroup() {
        let saved = ServiceExtensionEnvironment.current
        defer { ServiceExtensionEnvironment.current = saved }
        ServiceExtensionEnvironment.current = ServiceExtensionEnvironment(
            appGroupURL: URL(fileURLWithPath: "/tmp/app-group", isDirectory: true))
        #expect(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.x")?.path == "/tmp/app-group")
    }
}
