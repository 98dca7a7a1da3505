// APNs Sandbox — the binary NotificationRecord format: exact round trips and rejection of bad bytes.
import APNsProtocol
import Sandbox
@testable import Store
import Testing

@Suite struct NotificationRecordCodecTests {
    private func roundTrip(_ record: NotificationRecord) throws -> NotificationRecord {
        let bytes = NotificationRecordCodec.encode(record)
        return try bytes.withUnsafeBytes { try NotificationRecordCodec.decode($0) }
    }

    /// Every field, including nested displayed content and attachments, survives encoding unchanged.
    @Test func roundTripsEveryField() throws {
        var record = sampleRecord(status: .displayed)
        record.outcome = .bestAttempt
        record.environment = .production
        record.expiration = 0
        record.priority = 5
        record.connectionID = UInt64.max
        record.issuedAt = Int64.min
        record.receivedAt = Int64.max
        record.displayed = DisplayedContent(
            title: "Tïtle ✓", subtitle: "", body: "Line1\nLine2\t\"quoted\"\\", badge: -3, sound: "default",
            threadID: "thread", category: "CAT", interruptionLevel: "time-sensitive", targetContentID: "target",
            relevanceScore: 0.1 + 0.2, userInfoJSON: #"{"k":"v\u0000"}"#,
            attachments: [
                Attachment(identifier: "img", type: "public.png", size: 12_345, path: "a/b.png"),
                Attachment(identifier: "", type: "", size: 0, path: ""),
            ])
        record.timeline = [
            TimelineEntry(step: "accepted", at: 1, monotonic: 0),
            TimelineEntry(step: "displayed", at: -1, monotonic: UInt64.max, detail: "détail 🚀"),
        ]
        #expect(try roundTrip(record) == record)
    }

    /// Applied faults survive (format version 2); a record without faults is still written as version 1.
    @Test func roundTripsFaults() throws {
        var record = sampleRecord(status: .accepted)
        #expect(NotificationRecordCodec.encode(record).first == 1)
        record.faults = [
            AppliedFault(ruleID: "flt_1", name: "slow", action: "deliverLate", detail: "late", delivery: .deliverLate(milliseconds: 1500)),
            AppliedFault(ruleID: "r2", name: nil, action: "lose", detail: "", delivery: .lose),
            AppliedFault(ruleID: "r3", name: "x", action: "extensionTimeout", detail: "d", delivery: .extensionTimeout),
        ]
        #expect(NotificationRecordCodec.encode(record).first == 2)
        #expect(try roundTrip(record) == record)
    }

    /// Nil optionals stay nil and empty strings stay empty (the two are not confused).
    @Test func keepsNilApartFromEmpty() throws {
        let minimal = NotificationRecord(
            apnsID: "", deviceToken: "", bundleID: "", topic: "", payload: "", receivedAt: 0)
        #expect(try roundTrip(minimal) == minimal)
        var empty = minimal
        empty.uniqueID = ""
        empty.pushType = ""
        empty.collapseID = ""
        empty.teamID = ""
        empty.keyID = ""
        empty.headers = [[], [""]]
        empty.displayed = DisplayedContent()
        let decoded = try roundTrip(empty)
        #expect(decoded == empty)
        #expect(decoded.uniqueID == "")
        #expect(decoded.displayed?.title == nil)
    }

    /// Headers are written as two parts each; a header stored as a list of another length (the format allows it)
    /// reads as its first two parts, missing ones empty.
    @Test func readsHeadersOfAnyPartCount() throws {
        var record = sampleRecord()
        record.headers = [["apns-topic", "com.x"]]
        let bytes = NotificationRecordCodec.encode(record)
        let written: [UInt8] = [2, 10] + Array("apns-topic".utf8) + [5] + Array("com.x".utf8)
        let at = try #require(bytes.firstRange(of: written))
        for (parts, expected) in [([String](), HeaderField(name: "", value: "")),
                                  (["apns-topic"], HeaderField(name: "apns-topic", value: "")),
                                  (["apns-topic", "com.x", "extra"], HeaderField(name: "apns-topic", value: "com.x"))] {
            var patched = bytes
            patched.replaceSubrange(at, with: [UInt8(parts.count)] + parts.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) })
            let decoded = try patched.withUnsafeBytes { try NotificationRecordCodec.decode($0) }
            #expect(decoded.headers == [expected])
        }
    }

    /// Unicode, quotes, control characters, NUL and a large payload come back byte for byte.
    @Test func keepsHardStringsExactly() throws {
        let control = String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) })
        let hard = "\"\\/\u{2028}\u{2029}\u{FEFF}é" + "e\u{301}" + "👩‍👩‍👧" + control + "\u{10FFFF}"
        var record = sampleRecord()
        record.apnsID = hard
        record.payload = String(repeating: hard, count: 500) + String(repeating: "x", count: 100_000)
        record.headers = [[hard, hard]]
        record.timeline = [TimelineEntry(step: hard, at: 0, monotonic: 0, detail: hard)]
        let decoded = try roundTrip(record)
        #expect(decoded == record)
        #expect(Array(decoded.payload.utf8) == Array(record.payload.utf8))
        // "é" precomposed and decomposed are == as Strings but must keep their bytes.
        #expect(Array(decoded.apnsID.utf8) == Array(hard.utf8))
    }

    /// Doubles keep their exact bits, including negative zero, infinities and NaN.
    @Test func keepsDoubleBits() throws {
        for score in [0.0, -0.0, 1e-300, .infinity, -.infinity, .greatestFiniteMagnitude, .nan] {
            var record = sampleRecord()
            record.displayed = DisplayedContent(relevanceScore: score)
            let decoded = try roundTrip(record)
            #expect(decoded.displayed?.relevanceScore?.bitPattern == score.bitPattern)
        }
    }

    /// Every truncation of a valid record, and trailing garbage, is a corruptRecord error, never a crash.
    @Test func rejectsTruncatedAndExtendedBytes() throws {
        var record = sampleRecord(status: .displayed)
        record.displayed = DisplayedContent(
            title: "t", attachments: [Attachment(identifier: "i", type: "t", size: 1, path: "p")])
        let bytes = NotificationRecordCodec.encode(record)
        for length in 0..<bytes.count {
            let prefix = Array(bytes[..<length])
            #expect(throws: StoreError.self) { try prefix.withUnsafeBytes { try NotificationRecordCodec.decode($0) } }
        }
        let extended = bytes + [0]
        let error = try #require(throws: StoreError.self) {
            try extended.withUnsafeBytes { try NotificationRecordCodec.decode($0) }
        }
        #expect(error.code == .corruptRecord)
    }

    /// Unknown versions, huge counts, invalid UTF-8 and unknown enum values are rejected.
    @Test func rejectsInvalidBytes() throws {
        let bytes = NotificationRecordCodec.encode(sampleRecord())
        var wrongVersion = bytes
        wrongVersion[0] = 99
        var hugeCount = bytes
        hugeCount.replaceSubrange(1..<2, with: [0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
        var badUTF8 = bytes
        badUTF8[2] = 0xFF  // first byte of the apns-id
        var badStatus = NotificationRecordCodec.encode(sampleRecord(status: .stored))
        let statusRange = try #require(badStatus.firstRange(of: Array("stored".utf8)))
        badStatus.replaceSubrange(statusRange, with: Array("storeX".utf8))
        for sample in [wrongVersion, hugeCount, badUTF8, badStatus] {
            let error = try #require(throws: StoreError.self) {
                try sample.withUnsafeBytes { try NotificationRecordCodec.decode($0) }
            }
            #expect(error.code == .corruptRecord)
        }
    }
}
