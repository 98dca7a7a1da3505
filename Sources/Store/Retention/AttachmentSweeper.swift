// APNs Sandbox — removing the attachment files of notifications that are gone (pruned or deleted).
import Dispatch
import Foundation
import Glibc
import Sandbox
import Support
import Synchronization

/// Deletes the attachment folders of notifications that were removed.
///
/// Retention and `DELETE /api/v1/notifications` report the (apns-id, device) pairs they removed; this
/// removes `<data>/attachments/<apnsId>/<device>/` for each pair that is still gone when the work runs
/// (a new push may reuse the pair), the files of the older layout (`<apnsId>/<file>`) once no device has
/// that apns-id any more, and the apns-id folder once it is empty (`rmdir`, which never removes a folder
/// that gained a file meanwhile). A folder changed within the last ``recentSeconds`` is looked at again
/// that long later: an extension may still be moving files into it for a record the API deleted while
/// it ran. Pairs whose check failed (the store) are tried again a minute later, a few times. The work
/// runs on a utility queue (no thread of its own), never on the caller's thread, until ``stop()``; work can
/// be queued from construction on (there is nothing to start).
///
/// Where a notification's files are is the ``Layout``'s business (the extension runtime's attachment store
/// decides it; the Store module does not depend on that module).
public final class AttachmentSweeper: Sendable {
    /// Folder names under the root, relative to it.
    public struct Layout: Sendable {
        /// The folder of one notification's attachments on one device (`<apnsId>/<device>`).
        public var folder: @Sendable (_ apnsID: String, _ deviceToken: String) -> String
        /// The folder of every attachment of an apns-id (`<apnsId>`; the older layout kept files directly in it).
        public var apnsFolder: @Sendable (_ apnsID: String) -> String

        public init(
            folder: @escaping @Sendable (_ apnsID: String, _ deviceToken: String) -> String,
            apnsFolder: @escaping @Sendable (_ apnsID: String) -> String
        ) {
            self.folder = folder
            self.apnsFolder = apnsFolder
        }
    }

    /// `<data>/attachments`.
    public let root: String
    private let layout: Layout
    /// Whether a notification with this apns-id exists on that device (any device when nil).
    private let exists: @Sendable (_ apnsID: String, _ deviceToken: String?) throws -> Bool
    private let queue = DispatchQueue(label: "attachment-sweeper", qos: .utility)
    private let logger: Logger
    private let stopped = Atomic<Bool>(false)
    public static let recentSeconds: Double = 300
    static let retrySeconds: Double = 60
    static let maxAttempts = 3

    /// What one pass left for later.
    public struct Outcome {
        public var removed = 0
        /// Folders changed too recently to judge.
        public var recent: [NotificationKey] = []
        /// Pairs not checked because the store failed (with the error).
        public var failed: [NotificationKey] = []
        public var error: (any Error)?
    }

    /// - Parameters:
    ///   - root: `<data>/attachments`.
    ///   - layout: Where a notification's files are under `root`.
    ///   - logger: What was removed (info) and failures (warning).
    ///   - exists: Whether a notification with this apns-id exists on that device (any device when nil).
    public init(
        root: String, layout: Layout, logger: Logger,
        exists: @escaping @Sendable (_ apnsID: String, _ deviceToken: String?) throws -> Bool
    ) {
        self.root = root
        self.layout = layout
        self.logger = logger
        self.exists = exists
    }

    /// Queues the removal of the files of these removed notifications.
    public func removed(_ notifications: [NotificationKey]) {
        schedule(notifications, after: 0, attempt: 1)
    }

    private func schedule(_ notifications: [NotificationKey], after seconds: Double, attempt: Int) {
        guard !notifications.isEmpty, !stopped.load(ordering: .relaxed) else { return }
        let work: @Sendable () -> Void = { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            let outcome = sweep(notifications, now: Date())
            if outcome.removed > 0 {
                logger.info("removed attachments of removed notifications", [("count", "\(outcome.removed)")])
            }
            schedule(outcome.recent, after: Self.recentSeconds, attempt: attempt)
            if let error = outcome.error {
                logger.warning("removing attachments failed", [("error", "\(error)"), ("attempt", "\(attempt)")])
                if attempt < Self.maxAttempts { schedule(outcome.failed, after: Self.retrySeconds, attempt: attempt + 1) }
            }
        }
        // Now means queued now, so that `drain` waits for it.
        if seconds > 0 {
            queue.asyncAfter(deadline: .now() + seconds, execute: work)
        } else {
            queue.async(execute: work)
        }
    }

    /// Waits until the work queued so far is done (tests); work scheduled for later is not waited for.
    public func drain() {
        queue.sync {}
    }

    /// Drops queued and later work (the store is closing); waits for a pass that runs now. Idempotent.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        queue.sync {}
    }

    /// One pass: removes what belongs to `notifications` and is gone.
    public func sweep(_ notifications: [NotificationKey], now: Date) -> Outcome {
        let files = FileManager.default
        var outcome = Outcome()
        var apnsIDs: [String] = []
        var seen = Set<String>()
        for (index, notification) in notifications.enumerated() {
            let (apnsID, deviceToken) = (notification.apnsID, notification.deviceToken)
            let folder = root + "/" + layout.folder(apnsID, deviceToken)
            guard files.fileExists(atPath: folder) else {
                if seen.insert(apnsID).inserted { apnsIDs.append(apnsID) }
                continue
            }
            if isRecent(folder, now: now) {
                outcome.recent.append(notification)
                continue
            }
            do {
                if try exists(apnsID, deviceToken) { continue }
            } catch {
                outcome.error = error
                outcome.failed = Array(notifications[index...])
                return outcome
            }
            if (try? files.removeItem(atPath: folder)) != nil { outcome.removed += 1 }
            if seen.insert(apnsID).inserted { apnsIDs.append(apnsID) }
        }
        for apnsID in apnsIDs {
            let folder = root + "/" + layout.apnsFolder(apnsID)
            guard let entries = try? files.contentsOfDirectory(atPath: folder) else { continue }
            let oldLayoutFiles = entries.filter { entry in
                var isDirectory: ObjCBool = false
                return files.fileExists(atPath: folder + "/" + entry, isDirectory: &isDirectory) && !isDirectory.boolValue
            }
            if !oldLayoutFiles.isEmpty, (try? exists(apnsID, nil)) == false {
                for file in oldLayoutFiles where !isRecent(folder + "/" + file, now: now) {
                    if unlink(folder + "/" + file) == 0 { outcome.removed += 1 }
                }
            }
            if rmdir(folder) == 0 { outcome.removed += 1 }
        }
        return outcome
    }

    private func isRecent(_ path: String, now: Date) -> Bool {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        else { return false }
        return now.timeIntervalSince(modified) < Self.recentSeconds
    }
}
