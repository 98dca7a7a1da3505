// APNs Sandbox — removing the attachment files of notifications that are gone (pruned or deleted).
import Dispatch
import ExtensionRuntime
import Foundation
import Glibc
import Sandbox
import Support

/// Deletes the attachment folders of notifications that were removed.
///
/// Retention and `DELETE /api/v1/notifications` report the (apns-id, device) pairs they removed; this
/// removes `<data>/attachments/<apnsId>/<device>/` for each pair that is still gone when the work runs
/// (a new push may reuse the pair), the files of the older layout (`<apnsId>/<file>`) once no device has
/// that apns-id any more, and the apns-id folder once it is empty (`rmdir`, which never removes a folder
/// that gained a file meanwhile). A folder changed within the last ``recentSeconds`` is left alone: an
/// extension may still be moving files into it for a record the API deleted while it ran. The work runs
/// on a utility queue, one batch after another, never on the caller's thread.
final class AttachmentSweeper: Sendable {
    /// `<data>/attachments`.
    let root: String
    /// Whether a notification with this apns-id exists on that device (any device when nil).
    private let exists: @Sendable (_ apnsID: String, _ deviceToken: String?) throws -> Bool
    private let queue = DispatchQueue(label: "attachment-sweeper", qos: .utility)
    private let logger: Logger
    static let recentSeconds: Double = 300

    init(root: String, logger: Logger, exists: @escaping @Sendable (_ apnsID: String, _ deviceToken: String?) throws -> Bool) {
        self.root = root
        self.logger = logger
        self.exists = exists
    }

    /// Queues the removal of the files of these removed notifications.
    func removed(_ notifications: [NotificationKey]) {
        guard !notifications.isEmpty else { return }
        queue.async { [self] in
            do {
                let count = try sweep(notifications, now: Date())
                if count > 0 { logger.info("removed attachments of removed notifications", [("count", "\(count)")]) }
            } catch {
                logger.warning("removing attachments failed", [("error", "\(error)")])
            }
        }
    }

    /// Waits until the queued work is done (tests, shutdown).
    func drain() {
        queue.sync {}
    }

    /// Removes what belongs to `notifications` and is gone; returns how many folders and files went.
    func sweep(_ notifications: [NotificationKey], now: Date) throws -> Int {
        let files = FileManager.default
        var removed = 0
        var apnsIDs: [String] = []
        var seen = Set<String>()
        for notification in notifications {
            let (apnsID, deviceToken) = (notification.apnsID, notification.deviceToken)
            if seen.insert(apnsID).inserted { apnsIDs.append(apnsID) }
            let folder = root + "/" + AttachmentFolders.folder(apnsID: apnsID, deviceToken: deviceToken)
            guard files.fileExists(atPath: folder), !isRecent(folder, now: now),
                  try !exists(apnsID, deviceToken)
            else { continue }
            if (try? files.removeItem(atPath: folder)) != nil { removed += 1 }
        }
        for apnsID in apnsIDs {
            let folder = root + "/" + AttachmentFolders.apnsFolder(apnsID)
            guard let entries = try? files.contentsOfDirectory(atPath: folder) else { continue }
            let oldLayoutFiles = entries.filter { entry in
                var isDirectory: ObjCBool = false
                return files.fileExists(atPath: folder + "/" + entry, isDirectory: &isDirectory) && !isDirectory.boolValue
            }
            if !oldLayoutFiles.isEmpty, try !exists(apnsID, nil) {
                for file in oldLayoutFiles where !isRecent(folder + "/" + file, now: now) {
                    if unlink(folder + "/" + file) == 0 { removed += 1 }
                }
            }
            if rmdir(folder) == 0 { removed += 1 }
        }
        return removed
    }

    private func isRecent(_ path: String, now: Date) -> Bool {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        else { return false }
        return now.timeIntervalSince(modified) < Self.recentSeconds
    }
}
