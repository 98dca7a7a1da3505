// APNs Sandbox — the attachment files of removed notifications go; files of live ones stay.
import ExtensionRuntime
import Foundation
import Sandbox
@testable import Server
import Store
import Support
import Testing

@Suite struct AttachmentSweeperTests {
    static let logger = Logger(label: "test", level: .error)
    static let tokenA = String(repeating: "a", count: 64)
    static let tokenB = String(repeating: "b", count: 64)
    /// A Simulator-length token (160 hex digits): its folder is a prefix plus a hash.
    static let longToken = String(repeating: "c", count: 160)

    private func makeFiles(_ root: String, _ paths: [String]) throws {
        for path in paths {
            let file = root + "/" + path
            try FileManager.default.createDirectory(
                atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: file, contents: Data([1, 2, 3])))
        }
    }

    private func key(_ apnsID: String, _ token: String) -> NotificationKey {
        NotificationKey(apnsID: apnsID, deviceToken: token)
    }

    /// For each removed notification: its device folder goes unless the pair exists again; files of the
    /// older layout go once no device has the apns-id; empty apns-id folders go; long tokens map to the
    /// same folder the attachment store used.
    @Test func removesTheFilesOfRemovedNotificationsOnly() throws {
        let root = NSTemporaryDirectory() + "attachments-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = AttachmentFolders.folder
        let longFolder = folder("long-id", Self.longToken)
        #expect(longFolder.count < 200 && longFolder != folder("long-id", String(repeating: "c", count: 158) + "dd"))
        try makeFiles(root, [
            folder("reused", Self.tokenA) + "/a.png",  // removed, but the pair exists again
            folder("reused", Self.tokenB) + "/b.png",  // removed and gone
            folder("gone", Self.tokenA) + "/c.png",  // removed and gone: the apns-id folder empties
            "old/d.png",  // the older layout: no device has "old" any more
            longFolder + "/e.png",  // a live notification with a long token, not removed
            folder("long-id", String(repeating: "c", count: 158) + "dd") + "/f.png",  // removed, long token
        ])
        let live: Set<NotificationKey> = [key("reused", Self.tokenA), key("long-id", Self.longToken)]
        let sweeper = AttachmentSweeper(root: root, layout: .attachmentStore, logger: Self.logger) { apnsID, token in
            token.map { live.contains(NotificationKey(apnsID: apnsID, deviceToken: $0)) } ?? live.contains { $0.apnsID == apnsID }
        }
        let later = Date().addingTimeInterval(AttachmentSweeper.recentSeconds + 60)
        let outcome = sweeper.sweep([
            key("reused", Self.tokenA), key("reused", Self.tokenB), key("gone", Self.tokenA), key("old", Self.tokenA),
            key("long-id", String(repeating: "c", count: 158) + "dd"),
        ], now: later)
        let exists = { (path: String) in FileManager.default.fileExists(atPath: root + "/" + path) }
        #expect(exists(folder("reused", Self.tokenA) + "/a.png"))
        #expect(!exists(folder("reused", Self.tokenB)))
        #expect(!exists("gone"))
        #expect(!exists("old"))
        #expect(exists(longFolder + "/e.png"))
        #expect(!exists(folder("long-id", String(repeating: "c", count: 158) + "dd")))
        // reused/B, gone/A, gone, old/d.png, old, long-id/…dd
        #expect(outcome.removed == 6)
        #expect(outcome.recent.isEmpty && outcome.failed.isEmpty && outcome.error == nil)
    }

    /// Folders changed recently are left for a later look (an extension may still be moving files in);
    /// a store error stops the pass with the files in place and the unchecked pairs kept for a retry;
    /// queued work runs in the background; after `stop` nothing runs.
    @Test func recentFoldersAndStoreErrorsAreKeptForLater() throws {
        struct StoreDown: Error {}
        let root = NSTemporaryDirectory() + "attachments-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = AttachmentFolders.folder(apnsID: "id", deviceToken: Self.tokenA)
        let other = AttachmentFolders.folder(apnsID: "id2", deviceToken: Self.tokenA)
        try makeFiles(root, [path + "/a.png", other + "/b.png"])
        let gone = AttachmentSweeper(root: root, layout: .attachmentStore, logger: Self.logger) { _, _ in false }
        let recent = gone.sweep([key("id", Self.tokenA)], now: Date())
        #expect(recent.removed == 0 && recent.recent == [key("id", Self.tokenA)])
        #expect(FileManager.default.fileExists(atPath: root + "/" + path + "/a.png"))

        let failing = AttachmentSweeper(root: root, layout: .attachmentStore, logger: Self.logger) { _, _ in throw StoreDown() }
        let failed = failing.sweep([key("id", Self.tokenA), key("id2", Self.tokenA)], now: Date().addingTimeInterval(3600))
        #expect(failed.error is StoreDown)
        #expect(failed.failed == [key("id", Self.tokenA), key("id2", Self.tokenA)])
        #expect(FileManager.default.fileExists(atPath: root + "/" + path + "/a.png"))

        let third = AttachmentFolders.folder(apnsID: "id3", deviceToken: Self.tokenA)
        try makeFiles(root, [third + "/c.png"])
        let anHourAgo = Date().addingTimeInterval(-3600)
        for folder in [other, third] {
            try FileManager.default.setAttributes([.modificationDate: anHourAgo], ofItemAtPath: root + "/" + folder)
        }
        gone.removed([key("id", Self.tokenA), key("id3", Self.tokenA)])
        gone.drain()
        #expect(FileManager.default.fileExists(atPath: root + "/" + path), "recent: still there after the queued pass")
        #expect(!FileManager.default.fileExists(atPath: root + "/id3"), "old and gone: removed in the background")
        gone.stop()
        gone.removed([key("id2", Self.tokenA)])
        gone.drain()
        #expect(FileManager.default.fileExists(atPath: root + "/" + other), "stopped: nothing runs")
    }
}
