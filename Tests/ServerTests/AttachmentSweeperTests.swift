// APNs Sandbox — attachment files of notifications that are gone are swept; others stay.
import Foundation
@testable import Server
import Testing

@Suite struct AttachmentSweeperTests {
    /// Device folders without their notification go, files of the older layout go with their apns-id,
    /// empty apns-id folders go; everything that still has its notification stays.
    @Test func removesOnlyWhatHasNoNotification() throws {
        let root = NSTemporaryDirectory() + "attachments-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = [
            "kept-id/tok1/a.png", "kept-id/tok2/b.png",  // a notification exists on tok1 only
            "old-gone/c.png",  // older layout, no notification left
            "old-kept/d.png",  // older layout, a notification exists (on some device)
        ]
        for file in files {
            let path = root + "/" + file
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
        }
        try FileManager.default.createDirectory(atPath: root + "/empty-id", withIntermediateDirectories: true)
        let existing: Set<String> = ["kept-id|tok1", "kept-id|*", "old-kept|*"]
        let sweeper = AttachmentSweeper(root: root) { apnsID, deviceToken in
            existing.contains(apnsID + "|" + (deviceToken ?? "*"))
        }
        #expect(try sweeper.sweep() == 4)  // kept-id/tok2, old-gone/c.png, old-gone, empty-id
        let exists = { (path: String) in FileManager.default.fileExists(atPath: root + "/" + path) }
        #expect(exists("kept-id/tok1/a.png"))
        #expect(!exists("kept-id/tok2"))
        #expect(!exists("old-gone"))
        #expect(exists("old-kept/d.png"))
        #expect(!exists("empty-id"))
        #expect(try sweeper.sweep() == 0, "a second pass finds nothing")
    }

    /// A store error stops the pass and leaves the files.
    @Test func storeErrorsLeaveFiles() throws {
        struct StoreDown: Error {}
        let root = NSTemporaryDirectory() + "attachments-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/id/tok", withIntermediateDirectories: true)
        let sweeper = AttachmentSweeper(root: root) { _, _ in throw StoreDown() }
        #expect(throws: StoreDown.self) { try sweeper.sweep() }
        #expect(FileManager.default.fileExists(atPath: root + "/id/tok"))
    }
}
