// APNs Sandbox — the events a notification's life announces, saved with its records.
import APNsProtocol
import Foundation
import Sandbox
import Testing

@Suite struct NotificationEventTests {
    private func data(_ draft: EventDraft) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(draft.data)) as? [String: Any])
    }

    /// An attachment's href carries its identifier (an extension's free choice) as one percent-encoded segment.
    @Test func attachmentHrefsAreEncoded() {
        #expect(NotificationEvents.attachmentHref(apnsID: "a", deviceToken: "cd", identifier: "media")
            == "/api/v1/notifications/a/attachments/media?device=cd")
        #expect(NotificationEvents.attachmentHref(apnsID: "a", deviceToken: "cd", identifier: "my photo/1?x#y é")
            == "/api/v1/notifications/a/attachments/my%20photo%2F1%3Fx%23y%20%C3%A9?device=cd")
    }

    /// A displayed push announces `push.accepted` (with its payload) then `notification.displayed`
    /// (outcome, content, timings), each saved in the commit of its status change.
    @Test func acceptedThenDisplayed() throws {
        let harness = DeliveryHarness()
        let id = harness.push(payload: #"{"aps":{"alert":{"title":"T","body":"B"}},"k":1}"#).apnsID
        let events = harness.notifications.committedEvents
        #expect(events.map(\.type) == [.pushAccepted, .notificationDisplayed])
        #expect(events.allSatisfy { $0.deviceToken == DeliveryHarness.token && $0.topic == "com.example.a" })
        let accepted = try data(events[0])
        #expect(accepted["apnsId"] as? String == id)
        #expect(accepted["status"] as? String == "accepted")
        #expect((accepted["payload"] as? [String: Any])?["k"] as? Int == 1)
        let displayed = try data(events[1])
        #expect(displayed["outcome"] as? String == "direct")
        let content = try #require(displayed["displayed"] as? [String: Any])
        #expect(content["title"] as? String == "T" && content["body"] as? String == "B")
        #expect((displayed["timings"] as? [String: Any])?["sinceReceivedMs"] as? Int == 0)
        #expect(displayed["href"] as? String == "/api/v1/notifications/\(id)?device=\(DeliveryHarness.token)")
    }

    /// Offline: `notification.stored` with its reason; an older stored push coalesced away is
    /// `notification.discarded`; coming online displays the newest.
    @Test func storedDiscardedDisplayed() throws {
        let harness = DeliveryHarness(online: false)
        harness.push("old")
        harness.push("new")
        try harness.engine.setOnline(true, token: DeliveryHarness.token)
        let events = harness.notifications.committedEvents
        let types = events.map { "\($0.type.rawValue):\((try? data($0))?["apnsId"] as? String ?? "")" }
        #expect(types == [
            "push.accepted:old", "notification.stored:old", "push.accepted:new",
            "notification.discarded:old", "notification.stored:new", "notification.displayed:new",
        ])
        #expect(try data(events[1])["reason"] as? String != nil)
    }

    /// A save that changes no status (a low-priority push joining its batch) announces nothing.
    @Test func resavesAnnounceNothing() {
        let harness = DeliveryHarness(configure: { $0.lowPriorityDelayMilliseconds = 1000 })
        harness.push(priority: 5)
        #expect(harness.notifications.committedVersions.count == 2, "accepted, then re-saved with the deferred step")
        #expect(harness.notifications.committedEvents.map(\.type) == [.pushAccepted])
        harness.clock.advance(byMilliseconds: 1000)
        #expect(harness.notifications.committedEvents.map(\.type) == [.pushAccepted, .notificationDisplayed])
    }

    /// A background push ends as `notification.delivered-silent`; an expired one as `notification.expired`.
    @Test func silentAndExpired() throws {
        let harness = DeliveryHarness()
        harness.backgroundPush()
        #expect(harness.notifications.committedEvents.last?.type == .notificationDeliveredSilent)
        let offline = DeliveryHarness(online: false)
        offline.push(expiration: 0)
        #expect(offline.notifications.committedEvents.map(\.type) == [.pushAccepted, .notificationExpired])
    }

    /// The envelope is the Standard Webhooks payload shape with an RFC 3339 timestamp.
    @Test func envelope() throws {
        let event = SandboxEvent(id: 42, draft: EventDraft(type: .deviceUpdated, time: 1_796_033_468_125, data: Array(#"{"a":"\""}"#.utf8)))
        #expect(String(decoding: event.envelope, as: UTF8.self)
                == #"{"id":"evt_42","type":"device.updated","timestamp":"2026-11-30T10:11:08.125Z","data":{"a":"\""}}"#)
        #expect(ISOTimestamp.string(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        var writer = JSONWriter()
        writer.member("s", "tab\t nl\n ctl\u{1} quote\" back\\ é")
        writer.member("n", nil as String?)
        writer.member("b", true)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(writer.finish())) as? [String: Any])
        #expect(parsed["s"] as? String == "tab\t nl\n ctl\u{1} quote\" back\\ é")
        #expect(parsed["n"] == nil && parsed["b"] as? Bool == true)
    }

    /// RFC 3339 instants parse to what `ISOTimestamp.string` writes; offsets, fractions and lower case are taken,
    /// anything else is refused.
    @Test func parsesRFC3339Instants() {
        for milliseconds: Int64 in [0, 1, 999, 1_796_033_468_125, 253_402_300_799_999] {
            #expect(ISOTimestamp.milliseconds(parsing: ISOTimestamp.string(milliseconds: milliseconds)) == milliseconds)
        }
        #expect(ISOTimestamp.milliseconds(parsing: "2026-01-01T00:00:00Z") == 1_767_225_600_000)
        #expect(ISOTimestamp.milliseconds(parsing: "2026-01-01t01:30:00+01:30") == 1_767_225_600_000)
        #expect(ISOTimestamp.milliseconds(parsing: "2025-12-31T23:00:00-01:00") == 1_767_225_600_000)
        #expect(ISOTimestamp.milliseconds(parsing: "2026-01-01T00:00:00.5z") == 1_767_225_600_500)
        #expect(ISOTimestamp.milliseconds(parsing: "2026-01-01T00:00:00.123456789Z") == 1_767_225_600_123)
        for bad in ["", "2026-01-01", "2026-01-01T00:00:00", "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z",
                    "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00+0100",
                    "2026-01-01T00:00:00Z ", " 2026-01-01T00:00:00Z", "+2026-01-01T00:00:00Z", "2026-1-01T00:00:00Z"] {
            #expect(ISOTimestamp.milliseconds(parsing: bad) == nil, "\(bad)")
        }
    }
}
