// APNs Sandbox — payload size, shape and aps field extraction.
import APNsProtocol
import Testing

@Suite struct PayloadTests {
    private func parse(_ json: String, pushType: PushType? = .alert) -> Result<Payload, APNsError> {
        PushRequestValidator.payload(Array(json.utf8), pushType: pushType)
    }

    // MARK: Size

    /// An empty body is PayloadEmpty.
    @Test func rejectsEmptyBody() {
        let error = PushRequestValidator.payload([], pushType: .alert).error
        #expect(error?.reason == .payloadEmpty)
        #expect(error.map { String(decoding: $0.jsonBody, as: UTF8.self) } == #"{"reason":"PayloadEmpty"}"#)
    }

    /// 4096 bytes pass and 4097 are PayloadTooLarge (413) for every type but VoIP, and when the type is absent.
    @Test(arguments: [nil] + PushType.allCases.filter { $0 != .voip }.map(Optional.some))
    func enforcesFourKilobytes(type: PushType?) {
        #expect(PushRequestValidator.payload(payload(ofSize: 4096), pushType: type).value != nil)
        let error = PushRequestValidator.payload(payload(ofSize: 4097), pushType: type).error
        #expect(error?.reason == .payloadTooLarge)
        #expect(error?.status == 413)
    }

    /// VoIP allows 5120 bytes and rejects 5121.
    @Test func enforcesFiveKilobytesForVoIP() {
        #expect(PushRequestValidator.payload(payload(ofSize: 5120), pushType: .voip).value != nil)
        #expect(PushRequestValidator.payload(payload(ofSize: 5121), pushType: .voip).reason == .payloadTooLarge)
    }

    /// The size is checked before parsing: an oversized non-JSON body is PayloadTooLarge, not BadPayload.
    @Test func sizeBeforeParsing() {
        let junk = [UInt8](repeating: UInt8(ascii: "x"), count: 4097)
        #expect(PushRequestValidator.payload(junk, pushType: .alert).reason == .payloadTooLarge)
    }

    // MARK: Shape

    /// Non-JSON, non-object roots, a missing aps or a non-object aps are BadPayload (400).
    @Test(arguments: [
        "not json", "[]", #"[{"aps":{}}]"#, "null", "1", #""aps""#, "{}", #"{"APS":{}}"#, #"{"aps":[]}"#,
        #"{"aps":"alert"}"#, #"{"aps":null}"#, #"{"aps":1}"#, #"{"aps":{}"#, #"{"aps":{}}}"#, #"{"aps":{},}"#,
        #"{"aps":{"alert":"x",}}"#, #"{"aps":{}} {}"#, "\u{FEFF}{\"aps\":{}}", #"{"aps":{"badge":01}}"#,
        #"{"aps":{"alert":"\x"}}"#, #"{"aps":{"alert":"\ud800"}}"#, #"{'aps':{}}"#, #"{"aps":{"badge":NaN}}"#,
        #"{"aps":{},"aps":1}"#,
    ])
    func rejectsBadShapes(json: String) {
        let error = parse(json).error
        #expect(error?.reason == .badPayload, "\(json)")
        #expect(error?.status == 400)
    }

    /// Invalid UTF-8 inside a string is BadPayload.
    @Test func rejectsInvalidUTF8() {
        var body = Array(#"{"aps":{"alert":"x"}}"#.utf8)
        body[17] = 0xFF
        #expect(PushRequestValidator.payload(body, pushType: .alert).reason == .badPayload)
    }

    /// The smallest valid payload has an empty aps and keeps the raw bytes.
    @Test func acceptsMinimalPayload() throws {
        let body = Array(#" { "aps" : { } , "custom" : [1, {"k": null}] } "#.utf8)
        let payload = try #require(PushRequestValidator.payload(body, pushType: nil).value)
        #expect(payload.raw == body)
        #expect(!payload.hasAlert && !payload.isSilent && !payload.isContentAvailable && !payload.isMutableContent)
        #expect(payload.badge == nil && payload.sound == nil && payload.alertBody == nil)
    }

    // MARK: Fields

    /// Alert dictionaries yield title, subtitle and body, and the other aps fields come through.
    @Test func extractsFields() throws {
        let payload = try #require(parse(#"""
            {"aps":{"alert":{"title":"Hi","subtitle":"Sub","body":"Body \"q\" \u00e9 \ud83d\ude00","launch-image":"x"},
            "badge":3,"sound":"default","thread-id":"t1","category":"C","interruption-level":"time-sensitive",
            "mutable-content":1,"custom-in-aps":{"a":[1,2]}},"extra":"x"}
            """#).value)
        #expect(payload.hasAlert)
        #expect(payload.alertTitle == "Hi")
        #expect(payload.alertSubtitle == "Sub")
        #expect(payload.alertBody == "Body \"q\" é 😀")
        #expect(payload.badge == 3)
        #expect(payload.sound == "default")
        #expect(payload.threadID == "t1")
        #expect(payload.category == "C")
        #expect(payload.interruptionLevel == "time-sensitive")
        #expect(payload.isMutableContent)
        #expect(!payload.isContentAvailable)
        #expect(!payload.isSilent)
    }

    /// A string alert is the body.
    @Test func stringAlertIsBody() throws {
        let payload = try #require(parse(#"{"aps":{"alert":"Hello"}}"#).value)
        #expect(payload.hasAlert)
        #expect(payload.alertBody == "Hello")
        #expect(payload.alertTitle == nil)
    }

    /// Loc keys and ActivityKit loc objects count as alert text; launch-image alone does not.
    @Test(arguments: [
        (#"{"aps":{"alert":{"loc-key":"K"}}}"#, true), (#"{"aps":{"alert":{"title-loc-key":"K"}}}"#, true),
        (#"{"aps":{"alert":{"subtitle-loc-key":"K"}}}"#, true),
        (#"{"aps":{"alert":{"title":{"loc-key":"K","loc-args":[]}}}}"#, true),
        (#"{"aps":{"alert":{"launch-image":"x"}}}"#, false), (#"{"aps":{"alert":{}}}"#, false),
        (#"{"aps":{"alert":""}}"#, false), (#"{"aps":{"alert":null}}"#, false), (#"{"aps":{"alert":5}}"#, false),
        (#"{"aps":{"alert":{"title":null}}}"#, false),
    ])
    func detectsAlert(json: String, hasAlert: Bool) {
        #expect(parse(json).value?.hasAlert == hasAlert)
    }

    /// Sound as a string or as a critical-alert dictionary's name.
    @Test func readsSoundForms() {
        #expect(parse(#"{"aps":{"sound":"ping.aiff"}}"#).value?.sound == "ping.aiff")
        #expect(parse(#"{"aps":{"sound":{"critical":1,"name":"alarm.caf","volume":0.5}}}"#).value?.sound == "alarm.caf")
        #expect(parse(#"{"aps":{"sound":{"critical":1}}}"#).value?.sound == nil)
        #expect(parse(#"{"aps":{"sound":7}}"#).value?.sound == nil)
    }

    /// Badge must be an integer; other types and fractions count as absent.
    @Test(arguments: [
        (#"{"aps":{"badge":0}}"#, Optional(0)), (#"{"aps":{"badge":42}}"#, 42), (#"{"aps":{"badge":-1}}"#, -1),
        (#"{"aps":{"badge":"3"}}"#, nil), (#"{"aps":{"badge":1.5}}"#, nil), (#"{"aps":{"badge":1e2}}"#, nil),
        (#"{"aps":{"badge":true}}"#, nil), (#"{"aps":{"badge":null}}"#, nil),
        (#"{"aps":{"badge":99999999999999999999}}"#, nil),
    ])
    func readsBadge(json: String, badge: Int?) {
        #expect(parse(json).value?.badge == badge)
        #expect(parse(json).value != nil)
    }

    /// content-available 1 (or true) alone is silent; any alert, badge or sound makes it visible.
    @Test(arguments: [
        (#"{"aps":{"content-available":1}}"#, true), (#"{"aps":{"content-available":true}}"#, true),
        (#"{"aps":{"content-available":1,"thread-id":"t"},"custom":1}"#, true),
        (#"{"aps":{"content-available":0}}"#, false), (#"{"aps":{"content-available":"1"}}"#, false),
        (#"{"aps":{"content-available":1.0}}"#, false), (#"{"aps":{}}"#, false),
        (#"{"aps":{"content-available":1,"alert":"x"}}"#, false), (#"{"aps":{"content-available":1,"badge":0}}"#, false),
        (#"{"aps":{"content-available":1,"sound":"default"}}"#, false),
        (#"{"aps":{"content-available":1,"sound":{"critical":1}}}"#, false),
        (#"{"aps":{"content-available":1,"alert":{"body":"b"}}}"#, false),
        (#"{"aps":{"content-available":1,"alert":""}}"#, true),
    ])
    func detectsSilentPush(json: String, isSilent: Bool) {
        #expect(parse(json, pushType: .background).value?.isSilent == isSilent, "\(json)")
    }

    /// When a key repeats, the last occurrence wins, for aps itself and inside it.
    @Test func lastDuplicateWins() {
        #expect(parse(#"{"aps":{"badge":1},"aps":{"badge":2}}"#).value?.badge == 2)
        #expect(parse(#"{"aps":{"alert":"x","alert":{"title":"T"}}}"#).value?.alertBody == nil)
        #expect(parse(#"{"aps":{"alert":"x","alert":{"title":"T"}}}"#).value?.alertTitle == "T")
        #expect(parse(#"{"aps":1,"aps":{}}"#).value != nil)
    }
}
