// APNs Sandbox — removing the attachment files of notifications that are gone (pruned or deleted).
import Foundation

/// Deletes attachment folders whose notification no longer exists.
///
/// Attachments live in `<data>/attachments/<apnsId>/<deviceToken>/` (before schema 4, directly in
/// `<apnsId>/`). Retention and `DELETE /api/v1/notifications` remove records in SQL, without reading
/// them, so their files are swept afterwards by name: a device folder goes when no notification has
/// that apns-id on that device, a file of the older layout when no notification has that apns-id, an
/// apns-id folder once it is empty. A notification being delivered already has its row (the extension
/// runs only after the acceptance committed), so files that are still being attached are kept.
struct AttachmentSweeper: Sendable {
    /// `<data>/attachments`.
    let root: String
    /// Whether a notification with this apns-id exists on that device (any device when nil).
    let exists: @Sendable (_ apnsID: String, _ deviceToken: String?) throws -> Bool

    /// One pass over the folder. Returns how many folders and files were removed; stops at the first
    /// store error (the files then stay until the next pass).
    @discardableResult
    func sweep() throws -> Int {
        let files = FileManager.default
        guard let apnsIDs = try? files.contentsOfDirectory(atPath: root) else { return 0 }
        var removed = 0
        for apnsID in apnsIDs {
            let folder = root + "/" + apnsID
            for entry in (try? files.contentsOfDirectory(atPath: folder)) ?? [] {
                var isDirectory: ObjCBool = false
                guard files.fileExists(atPath: folder + "/" + entry, isDirectory: &isDirectory) else { continue }
                let owner = isDirectory.boolValue ? entry : nil
                if try !exists(apnsID, owner), (try? files.removeItem(atPath: folder + "/" + entry)) != nil {
                    removed += 1
                }
            }
            if (try? files.contentsOfDirectory(atPath: folder))?.isEmpty == true,
               (try? files.removeItem(atPath: folder)) != nil
            {
                removed += 1
            }
        }
        return removed
    }
}
