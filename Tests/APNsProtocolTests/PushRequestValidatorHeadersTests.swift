// APNs Sandbox — apns-* and authorization header rules.
import APNsProtocol
import Testing

@Suite struct PushRequestValidatorHeadersTests {
    private typealias Headers = [(name: String, value: String)]

    private func validate(_ headers: Headers) -> Result<PushHeaders, APNsError> {
        PushRequestValidator.headers(headers)
    }

    /// No headers at all: everything absent, priority 10.
    @Test func defaultsWhenAbsent() {
        #expect(validate([]).value == PushHeaders(priority: 10))
    }

    /// A background push without `apns-priority` gets 5, the only priority it may have; one that names a priority
    /// keeps it (10 is refused later, with its topic: `BadPriority`), and other push types default to 10.
    @Test func backgroundPushDefaultsToPriorityFive() {
        #expect(validate([("apns-push-type", "background")]).value?.priority == 5)
        #expect(validate([("apns-push-type", "background"), ("apns-priority", "10")]).value?.priority == 10)
        #expect(validate([("apns-push-type", "background"), ("apns-priority", "1")]).value?.priority == 1)
        #expect(validate([("apns-push-type", "alert")]).value?.priority == 10)
        #expect(validate([("apns-push-type", "voip")]).value?.priority == 10)
    }

    /// A full, valid set of headers is returned as sent; unknown headers are ignored.
    @Test func acceptsFullSet() throws {
        let headers = try #require(validate([
            ("apns-id", "123e4567-e89b-12d3-a456-4266554400a0"), ("apns-push-type", "alert"),
            ("apns-topic", "com.example.app"), ("apns-priority", "5"), ("apns-expiration", "1700000000"),
            ("apns-collapse-id", "score"), ("authorization", "bearer abc"), ("user-agent", "x"), ("user-agent", "y"),
            ("content-type", "application/json"),
        ]).value)
        #expect(headers == PushHeaders(
            pushType: .alert, topic: "com.example.app", priority: 5, expiration: 1_700_000_000, collapseID: "score",
            apnsID: "123e4567-e89b-12d3-a456-4266554400a0", authorization: "bearer abc"))
    }

    // MARK: Duplicates

    /// Any apns-* header or authorization sent twice is DuplicateHeaders, even with equal values.
    @Test(arguments: [
        "apns-id", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id",
        "authorization", "apns-channel-id", "apns-unknown",
    ])
    func rejectsDuplicates(name: String) {
        let valid: [String: String] = [
            "apns-id": "123e4567-e89b-12d3-a456-4266554400a0", "apns-push-type": "alert", "apns-topic": "a.b",
            "apns-priority": "10", "apns-expiration": "0", "apns-collapse-id": "c", "authorization": "bearer x",
        ]
        let value = valid[name] ?? "v"
        let error = validate([(name, value), ("apns-topic-x", "1"), (name, value)]).error
        #expect(error?.reason == .duplicateHeaders)
        #expect(error?.status == 400)
    }

    /// Duplicates are reported before any invalid value, including a bad apns-id.
    @Test func duplicatesComeFirst() {
        #expect(validate([("apns-id", "bad"), ("apns-priority", "7"), ("apns-topic", "a"), ("apns-topic", "a")]).reason
            == .duplicateHeaders)
    }

    /// Repeated unrelated headers are fine.
    @Test func ignoresUnrelatedDuplicates() {
        #expect(validate([("accept", "a"), ("accept", "b"), ("x-apns-id", "1"), ("x-apns-id", "2")]).value != nil)
    }

    // MARK: apns-id

    /// apns-id of either case is accepted and returned lowercased.
    @Test(arguments: [
        ("123e4567-e89b-12d3-a456-4266554400a0", "123e4567-e89b-12d3-a456-4266554400a0"),
        ("1294465C-E2AA-61D5-E49A-72E1A3C70BDC", "1294465c-e2aa-61d5-e49a-72e1a3c70bdc"),
        ("aBcDeF01-2345-6789-AbCd-EF0123456789", "abcdef01-2345-6789-abcd-ef0123456789"),
    ])
    func lowercasesMessageID(sent: String, expected: String) {
        #expect(validate([("apns-id", sent)]).value?.apnsID == expected)
    }

    /// Anything but 8-4-4-4-12 hex is BadMessageId.
    @Test(arguments: [
        "", "123e4567e89b12d3a4564266554400a0", "123e4567-e89b-12d3-a456-4266554400a", "123e4567-e89b-12d3-a456-4266554400a00",
        "123e4567-e89b-12d3-a456_4266554400a0", "g23e4567-e89b-12d3-a456-4266554400a0", "{123e4567-e89b-12d3-a456-4266554400a0}",
        " 123e4567-e89b-12d3-a456-4266554400a0", "123e4567-e89b-12d3-a4564-266554400a0", "not-a-uuid",
    ])
    func rejectsBadMessageID(id: String) {
        #expect(validate([("apns-id", id)]).reason == .badMessageId)
    }

    /// A bad apns-id is reported before the other header errors.
    @Test func messageIDCheckedBeforeOthers() {
        #expect(validate([("apns-priority", "7"), ("apns-push-type", "nope"), ("apns-id", "x")]).reason == .badMessageId)
    }

    /// The id to echo is found even when the headers are rejected, but not when repeated or malformed.
    @Test func echoesMessageIDOfRejectedHeaders() {
        let id = "1294465C-E2AA-61D5-E49A-72E1A3C70BDC"
        #expect(PushRequestValidator.echoedAPNsID(in: [("apns-priority", "7"), ("apns-id", id)])
            == id.lowercased())
        #expect(PushRequestValidator.echoedAPNsID(in: [("apns-id", id), ("apns-id", id)]) == nil)
        #expect(PushRequestValidator.echoedAPNsID(in: [("apns-id", "x")]) == nil)
        #expect(PushRequestValidator.echoedAPNsID(in: []) == nil)
    }

    // MARK: apns-push-type

    /// All 11 push types parse.
    @Test(arguments: PushType.allCases)
    func acceptsEveryPushType(type: PushType) {
        #expect(validate([("apns-push-type", type.rawValue)]).value?.pushType == type)
    }

    /// Unknown, differently cased or padded push types are InvalidPushType.
    @Test(arguments: ["", "Alert", "ALERT", "alert ", "notification", "live-activity", "voip-ptt"])
    func rejectsUnknownPushType(value: String) {
        #expect(validate([("apns-push-type", value)]).reason == .invalidPushType)
    }

    // MARK: apns-priority

    /// Exactly "1", "5" and "10" are accepted.
    @Test(arguments: [("1", 1), ("5", 5), ("10", 10)])
    func acceptsPriorities(value: String, expected: Int) {
        #expect(validate([("apns-priority", value)]).value?.priority == expected)
    }

    /// Everything else is BadPriority, including padding and leading zeros.
    @Test(arguments: ["0", "10 ", " 10", "abc", "", "05", "010", "+5", "-1", "2", "11", "1.0", "١٠"])
    func rejectsBadPriority(value: String) {
        #expect(validate([("apns-priority", value)]).reason == .badPriority)
    }

    // MARK: apns-expiration

    /// Non-negative integers fitting Int64 are accepted, 0 included.
    @Test(arguments: [("0", Int64(0)), ("1700000000", 1_700_000_000), ("9223372036854775807", .max), ("007", 7)])
    func acceptsExpiration(value: String, expected: Int64) {
        #expect(validate([("apns-expiration", value)]).value?.expiration == expected)
    }

    /// Signs, non-digits, empty values and overflow are BadExpirationDate.
    @Test(arguments: ["-1", "abc", "", "9223372036854775808", "99999999999999999999999", "+1", "1.5", " 1", "1 ", "1e9"])
    func rejectsBadExpiration(value: String) {
        #expect(validate([("apns-expiration", value)]).reason == .badExpirationDate)
    }

    // MARK: apns-collapse-id

    /// 64 bytes are accepted, 65 are BadCollapseId; multi-byte characters count in bytes.
    @Test func collapseIDLimitIsInBytes() {
        let ascii64 = String(repeating: "c", count: 64)
        #expect(validate([("apns-collapse-id", ascii64)]).value?.collapseID == ascii64)
        #expect(validate([("apns-collapse-id", ascii64 + "c")]).reason == .badCollapseId)
        let euro21 = String(repeating: "€", count: 21)  // 63 bytes, 21 characters
        #expect(validate([("apns-collapse-id", euro21 + "c")]).value?.collapseID == euro21 + "c")
        #expect(validate([("apns-collapse-id", euro21 + "é")]).reason == .badCollapseId)  // 65 bytes, 22 characters
        // Bytes that were not UTF-8 reach the validator as U+FFFD: refused, not stored as a different id.
        #expect(validate([("apns-collapse-id", String(decoding: [0x61, 0xFF, 0x62], as: UTF8.self))]).reason == .badCollapseId)
    }

    /// An empty collapse id counts as absent.
    @Test func emptyCollapseIDIsAbsent() {
        let headers = validate([("apns-collapse-id", "")])
        #expect(headers.value != nil)
        #expect(headers.value?.collapseID == nil)
    }

    // MARK: apns-topic

    /// Ordinary topics, up to 255 bytes, are kept as sent.
    @Test(arguments: ["com.example.app", "com.example.app.voip", "x", String(repeating: "a", count: 255), "com.exämple"])
    func acceptsTopic(topic: String) {
        #expect(validate([("apns-topic", topic)]).value?.topic == topic)
    }

    /// Empty, over-long, white space and control characters are BadTopic.
    @Test(arguments: [
        "", String(repeating: "a", count: 256), "com.example app", " com.example.app", "com.example.app\t",
        "com.example\napp", "com.example\u{0}app", "com.example\u{7F}app", "com.example\u{85}app",
        "com.example\u{A0}app", "com.example\u{2028}app", String(repeating: "é", count: 128),
    ])
    func rejectsBadTopic(topic: String) {
        #expect(validate([("apns-topic", topic)]).reason == .badTopic)
    }

    // MARK: Order

    /// After duplicates and apns-id: push type, priority, expiration, collapse id, then topic.
    @Test func checksInDocumentedOrder() {
        var headers: Headers = [
            ("apns-topic", ""), ("apns-collapse-id", String(repeating: "c", count: 65)), ("apns-expiration", "-1"),
            ("apns-priority", "7"), ("apns-push-type", "nope"),
        ]
        let expected: [APNsReason] = [.invalidPushType, .badPriority, .badExpirationDate, .badCollapseId, .badTopic]
        for reason in expected {
            #expect(validate(headers).reason == reason)
            headers.removeLast()
        }
        #expect(validate(headers).value != nil)
    }
}
