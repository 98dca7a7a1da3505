// APNs Sandbox — the runtime's content conversions and media sniffing.
import APNsProtocol
import Sandbox
import Testing

@testable import ExtensionRuntime

@Suite struct ExtensionContentTests {
    /// Unchanged userInfo keeps the original's exact text; changed userInfo is re-serialized without `aps`.
    @Test func userInfoIsKeptOrRewrittenWithoutAps() throws {
        let payload = try JSON.parse(#"{"aps":{"alert":"hi"},"n":1.0}"#)
        let original = DisplayedContent(body: "hi", userInfoJSON: #"{"n":1.0}"#)
        let request = ExtensionContent(original: original, payload: payload)
        #expect(request.displayed(original: original, requestUserInfo: payload, attachments: []).userInfoJSON
            == #"{"n":1.0}"#)
        var changed = request
        changed.userInfo.set("extra", .bool(true))
        #expect(changed.displayed(original: original, requestUserInfo: payload, attachments: []).userInfoJSON
            == #"{"n":1.0,"extra":true}"#)
    }

    /// Content from an extension: absent and null fields are nil; wrong types are errors.
    @Test func parsesExtensionContent() throws {
        let content = try ExtensionContent(json: JSON.parse(
            #"{"title":"T","body":null,"badge":3,"sound":{"name":"ping.aiff","critical":1},"relevanceScore":0.5,"attachments":[{"identifier":"i","url":"file:///x.png","options":{"typeHint":"public.png"}}]}"#))
        #expect(content.title == "T" && content.body == nil && content.badge == 3 && content.sound == "ping.aiff")
        #expect(content.relevanceScore == 0.5)
        #expect(content.attachments == [.init(identifier: "i", location: "file:///x.png", typeHint: "public.png")])
        #expect(content.hasAlertText)
        #expect(!(try ExtensionContent(json: JSON.parse(#"{"title":""}"#))).hasAlertText)
        for bad in [#"[]"#, #"{"title":1}"#, #"{"badge":"x"}"#, #"{"userInfo":[]}"#, #"{"attachments":[{}]}"#] {
            #expect(throws: ExtensionContent.ContentError.self, "\(bad)") { try ExtensionContent(json: JSON.parse(bad)) }
        }
    }
}

@Suite struct MediaTypeTests {
    /// Each supported type is recognised by its magic bytes, and others are not.
    @Test func sniffsByContent() {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        let cases: [([UInt8], MediaType?)] = [
            ([0xFF, 0xD8, 0xFF, 0xE0], .jpeg),
            ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], .png),
            (bytes("GIF87a"), .gif), (bytes("GIF89a"), .gif),
            (bytes("ID3\u{03}"), .mp3), ([0xFF, 0xFB, 0x90, 0x00], .mp3), ([0xFF, 0xF3, 0x90], .mp3),
            ([0xFF, 0xF1, 0x50, 0x80], .aac),
            ([0, 0, 0, 0x20] + bytes("ftypM4A "), .m4a), ([0, 0, 0, 0x18] + bytes("ftypisom"), .mp4),
            ([0, 0, 0, 0x18] + bytes("ftypmp42"), .mp4),
            (bytes("FORM") + [0, 0, 0, 0] + bytes("AIFF"), .aiff),
            (bytes("RIFF") + [0, 0, 0, 0] + bytes("WAVE"), .wav),
            (bytes("RIFF") + [0, 0, 0, 0] + bytes("AVI "), .avi),
            ([0, 0, 1, 0xBA], .mpeg), ([0, 0, 1, 0xB3], .mpeg),
            (bytes("RIFF") + [0, 0, 0, 0] + bytes("WEBP"), nil),
            (bytes("<html>"), nil), ([], nil), ([0xFF], nil), ([0xFF, 0xFD], nil),
        ]
        for (header, expected) in cases {
            #expect(MediaType.sniff(header) == expected, "\(header)")
        }
        #expect(MediaType.m4a.kind == .audio && MediaType.mp4.kind == .video && MediaType.gif.kind == .image)
        #expect(MediaType.Kind.image.maxBytes == 10 << 20 && MediaType.Kind.audio.maxBytes == 5 << 20
            && MediaType.Kind.video.maxBytes == 50 << 20)
    }
}

@Suite struct InstanceStateMachineTests {
    static let content = ExtensionContent(original: DisplayedContent(title: "T"), payload: .object([]))

    /// In time → processed; the second call is ignored.
    @Test func firstContentWins() {
        var machine = InstanceStateMachine()
        guard case .decide(let decision) = machine.contentHandlerCalled(Self.content) else {
            Issue.record("no decision")
            return
        }
        #expect(decision.outcome == .processed)
        guard case .ignored = machine.contentHandlerCalled(Self.content) else {
            Issue.record("second call not ignored")
            return
        }
        guard case .none = machine.failed(.crash("late")) else {
            Issue.record("a crash after content changed the outcome")
            return
        }
    }

    /// Budget → timeWillExpire; content in grace → best-attempt; nothing → original-timeout.
    @Test func budgetAndGrace() {
        var machine = InstanceStateMachine()
        guard case .deliverTimeWillExpire = machine.budgetElapsed() else {
            Issue.record("no timeWillExpire")
            return
        }
        var late = machine
        if case .decide(let decision) = late.contentHandlerCalled(Self.content) {
            #expect(decision.outcome == .bestAttempt)
        } else {
            Issue.record("no best attempt")
        }
        if case .decide(let decision) = machine.graceElapsed() {
            #expect(decision.outcome == .originalTimeout && decision.content == nil)
        } else {
            Issue.record("no timeout")
        }
        var empty = InstanceStateMachine()
        if case .decide(let decision) = empty.contentHandlerCalled(BuiltinDriver.withoutAlert(Self.content)) {
            #expect(decision.outcome == .originalNoAlert)
        }
        var failing = InstanceStateMachine()
        if case .decide(let decision) = failing.failed(.error("x")) { #expect(decision.outcome == .originalError) }
    }
}
