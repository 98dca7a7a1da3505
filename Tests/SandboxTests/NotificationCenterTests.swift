// APNs Sandbox — the Notification Center view: collapse, badges, uninstalled apps.
import APNsProtocol
import Foundation
import Sandbox
import Testing

@Suite struct NotificationCenterTests {
    /// A later notification with the same collapse ID replaces the earlier one and moves to the top.
    @Test func collapseReplacesAndMovesToTop() throws {
        let harness = DeliveryHarness()
        let first = harness.push(payload: #"{"aps":{"alert":"score 1-0"}}"#, collapseID: "match").apnsID
        harness.clock.advance(byMilliseconds: 10)
        let other = harness.push(payload: #"{"aps":{"alert":"hello"}}"#).apnsID
        harness.clock.advance(byMilliseconds: 10)
        let update = harness.push(payload: #"{"aps":{"alert":"score 2-0"}}"#, collapseID: "match").apnsID
        harness.clock.advance(byMilliseconds: 10)
        let otherApp = harness.push(
            bundleID: "com.example.b", payload: #"{"aps":{"alert":"b"}}"#, collapseID: "match").apnsID
        let center = try harness.center()
        #expect(center.notifications.map(\.apnsID) == [otherApp, update, other])
        #expect(center.notifications[1].identifier == "match")
        #expect(center.notifications[1].content.body == "score 2-0")
        #expect(center.notifications[1].displayedAt == DeliveryHarness.start + 20)
        #expect(center.notifications[2].identifier == other)
        #expect(harness.status(first) == .displayed)
    }

    /// Badges: a badge sets it, no badge leaves it, 0 clears it, and a background push's badge counts too.
    @Test func badgeRules() throws {
        let harness = DeliveryHarness()
        harness.push(payload: #"{"aps":{"alert":"a","badge":5}}"#)
        #expect(try harness.center().badges == ["com.example.a": 5])
        harness.push(payload: #"{"aps":{"alert":"no badge"}}"#)
        #expect(try harness.center().badges == ["com.example.a": 5])
        harness.push(bundleID: "com.example.b", payload: #"{"aps":{"badge":2}}"#)
        #expect(try harness.center().badges == ["com.example.a": 5, "com.example.b": 2])
        harness.push(payload: #"{"aps":{"alert":"read","badge":0}}"#)
        #expect(try harness.center().badges == ["com.example.b": 2])
        let silent = harness.push(payload: #"{"aps":{"content-available":1,"badge":3}}"#, priority: 5,
                                  pushType: "background").apnsID
        #expect(harness.status(silent) == .deliveredSilent)
        #expect(try harness.center().badges == ["com.example.a": 3, "com.example.b": 2])
        // The badge-only push is not listed.
        #expect(try harness.center().notifications.map(\.content.body) == ["read", "no badge", "a"])
    }

    /// Notifications and badges of an uninstalled app disappear.
    @Test func uninstalledAppsDisappear() throws {
        let harness = DeliveryHarness()
        harness.push(bundleID: "com.example.a", payload: #"{"aps":{"alert":"a","badge":1}}"#)
        let kept = harness.push(bundleID: "com.example.b", payload: #"{"aps":{"alert":"b"}}"#).apnsID
        try harness.engine.uninstall(bundleID: "com.example.a", token: DeliveryHarness.token)
        let center = try harness.center()
        #expect(center.notifications.map(\.apnsID) == [kept])
        #expect(center.badges.isEmpty)
    }

    /// A limit keeps the newest notifications after collapse; `total` counts them all, and badges come from
    /// every record, those beyond the limit included.
    @Test func limitKeepsTheNewestAndCountsTheRest() throws {
        let harness = DeliveryHarness()
        harness.push(bundleID: "com.example.b", payload: #"{"aps":{"alert":"oldest","badge":4}}"#)
        var bodies: [String] = []
        for index in 0..<5 {
            harness.clock.advance(byMilliseconds: 10)
            harness.push(payload: #"{"aps":{"alert":"n\#(index)"}}"#, collapseID: index == 4 ? "c" : nil)
            bodies.insert("n\(index)", at: 0)
        }
        harness.clock.advance(byMilliseconds: 10)
        harness.push(payload: #"{"aps":{"alert":"n4 again"}}"#, collapseID: "c")  // replaces n4
        bodies[0] = "n4 again"
        let all = try harness.engine.notificationCenter(token: DeliveryHarness.token)
        #expect(all.total == 6 && all.notifications.map(\.content.body) == bodies + ["oldest"])
        let newest = try harness.engine.notificationCenter(token: DeliveryHarness.token, limit: 2)
        #expect(newest.notifications.map(\.content.body) == ["n4 again", "n3"])
        #expect(newest.total == 6)
        #expect(newest.badges == ["com.example.b": 4])
        #expect(try harness.engine.notificationCenter(token: DeliveryHarness.token, limit: 0).notifications.isEmpty)
    }

    /// The view round-trips through JSON.
    @Test func viewIsCodable() throws {
        let harness = DeliveryHarness()
        harness.push(payload: #"{"aps":{"alert":"a","badge":1}}"#)
        let center = try harness.center()
        let data = try JSONEncoder().encode(center)
        #expect(try JSONDecoder().decode(NotificationCenterView.self, from: data) == center)
    }
}
