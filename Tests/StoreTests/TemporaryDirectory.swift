// APNs Sandbox — test fixtures for the store: temporary database files and sample records.
import APNsProtocol
import Foundation
import Sandbox
import Store

/// A fresh directory under the system temp dir, removed when the value is deinitialized.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let base = NSTemporaryDirectory() + "store-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { path + "/" + name }
}

/// A record with every field set to something non-default.
func sampleRecord(
    apnsID: String = UUID().uuidString, token: String = String(repeating: "ab", count: 32),
    topic: String = "com.example.app",
    receivedAt: Int64 = 1_700_000_000_000, status: NotificationStatus = .accepted
) -> NotificationRecord {
    NotificationRecord(
        apnsID: apnsID, uniqueID: "unique-" + apnsID, deviceToken: token, bundleID: topic, topic: topic,
        pushType: "alert", priority: 10, expiration: 1_700_003_600, collapseID: "collapse",
        environment: .development, headers: [["apns-topic", topic], ["apns-priority", "10"]],
        payload: #"{"aps":{"alert":{"title":"Hello","body":"World"}},"k":1}"#, authentication: "token:TEAM/KEY",
        teamID: "TEAM123456", keyID: "KEY1234567", issuedAt: 1_699_999_000, connectionID: 42, receivedAt: receivedAt,
        status: status, outcome: nil, displayed: nil,
        timeline: [TimelineEntry(step: "accepted", at: receivedAt, monotonic: 123_456_789)])
}
