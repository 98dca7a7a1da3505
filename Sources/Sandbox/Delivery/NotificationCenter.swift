// APNs Sandbox — what the user of a simulated device sees now: notifications after collapse, badges.
import APNsProtocol

/// One notification in a device's Notification Center.
public struct DisplayedNotification: Sendable, Codable, Equatable {
    public var apnsID: String
    public var bundleID: String
    /// `apns-collapse-id` when the push had one, else the apns-id (the `UNNotificationRequest` identifier).
    public var identifier: String
    public var content: DisplayedContent
    /// Wall-clock ms at which it was displayed.
    public var displayedAt: Int64

    public init(apnsID: String, bundleID: String, identifier: String, content: DisplayedContent, displayedAt: Int64) {
        self.apnsID = apnsID
        self.bundleID = bundleID
        self.identifier = identifier
        self.content = content
        self.displayedAt = displayedAt
    }
}

/// A device's Notification Center: the displayed notifications, newest first, and the badge per app.
///
/// Built from the device's final records replayed in display order (the time of their `displayed` or
/// `delivered-silent` timeline step; ties keep acceptance order):
/// - **Collapse:** a notification whose identifier (collapse ID, else apns-id) is already shown for the same
///   app replaces it, and the replacement takes the newest position (iOS moves an updated request to the top).
/// - **Listing:** only `displayed` records with alert text (a non-empty title, subtitle or body) are listed;
///   badge-only and sound-only pushes change the badge but add no row.
/// - **Badges:** a record with a badge sets its app's badge (for `displayed`, the badge of the content shown,
///   which the extension may have changed; for `delivered-silent`, the payload's `badge`); `0` (or a negative
///   number) clears it: the app has no entry in ``badges``. A record without a badge leaves it unchanged.
/// - **Uninstalled apps:** notifications of an app the device record shows as uninstalled, or displayed before
///   the app's `installedAt`, are gone, and so is their badge.
public struct NotificationCenterView: Sendable, Codable, Equatable {
    /// Newest first; the newest `limit` when the view was built with one.
    public var notifications: [DisplayedNotification]
    /// How many notifications the device lists, `notifications` and the older ones a limit left out.
    public var total: Int
    /// Bundle ID → badge; apps without a badge are absent.
    public var badges: [String: Int]

    public init(notifications: [DisplayedNotification] = [], total: Int? = nil, badges: [String: Int] = [:]) {
        self.notifications = notifications
        self.total = total ?? notifications.count
        self.badges = badges
    }

    /// The records ``init(records:device:limit:)`` reads; the others do not change what the device shows.
    public static let statuses: [NotificationStatus] = [.displayed, .deliveredSilent]

    /// The view a device shows after `records` (statuses other than `displayed` and `delivered-silent` are
    /// ignored).
    /// - Parameters:
    ///   - records: The device's records, newest first as the repository lists them (the order only breaks
    ///     ties between records shown at the same instant and received at the same millisecond).
    ///   - device: The device, for installed apps; nil shows every app.
    ///   - limit: At most this many notifications, the newest (``total`` counts them all); nil lists all.
    ///     Badges always reflect every record.
    public init(records: [NotificationRecord], device: DeviceRecord?, limit: Int? = nil) {
        let apps = Dictionary((device?.apps ?? []).map { ($0.bundleID, $0) }, uniquingKeysWith: { _, last in last })
        // Sorts small keys, not the records: moving a record is a copy of a large struct.
        let shown = records.indices.compactMap { offset -> Shown? in
            let record = records[offset]
            guard record.status == .displayed || record.status == .deliveredSilent,
                let step = record.timeline.last(where: { $0.step == record.status.rawValue })
            else { return nil }
            if let app = apps[record.bundleID] {
                guard app.uninstalledAt == nil, step.at >= app.installedAt else { return nil }
            }
            return Shown(at: step.at, monotonic: step.monotonic, receivedAt: record.receivedAt, offset: offset)
        }
        .sorted()

        // nil: replaced by a later one of the same identifier
        var rows: [(offset: Int, at: Int64, content: DisplayedContent)?] = []
        var rowIndex: [String: Int] = [:]  // "bundleID NUL identifier" → its position in rows
        var badges: [String: Int] = [:]
        for item in shown {
            let record = records[item.offset]
            let badge: Int? =
                record.status == .displayed
                ? record.displayed?.badge
                : try? PushRequestValidator.payload(
                    Array(record.payload.utf8), pushType: record.pushType.flatMap(PushType.init(rawValue:))
                ).get().badge
            if let badge {
                badges[record.bundleID] = badge > 0 ? badge : nil
            }
            guard record.status == .displayed, let content = record.displayed,
                DisplayedContentBuilder.hasAlertText(content)
            else { continue }
            let key = record.bundleID + "\u{0}" + (record.collapseID ?? record.apnsID)
            if let replaced = rowIndex[key] { rows[replaced] = nil }
            rowIndex[key] = rows.count
            rows.append((item.offset, item.at, content))
        }
        let listed = rows.reversed().compactMap { $0 }
        self.notifications = listed.prefix(max(limit ?? listed.count, 0)).map { row in
            let record = records[row.offset]
            return DisplayedNotification(
                apnsID: record.apnsID, bundleID: record.bundleID, identifier: record.collapseID ?? record.apnsID,
                content: row.content, displayedAt: row.at)
        }
        self.total = listed.count
        self.badges = badges
    }

    /// When a record was shown, ordered by wall time, then monotonic time, then receipt, then reversed input
    /// position.
    private struct Shown: Comparable {
        var at: Int64
        var monotonic: UInt64
        var receivedAt: Int64
        var offset: Int

        static func < (lhs: Shown, rhs: Shown) -> Bool {
            if lhs.at != rhs.at { return lhs.at < rhs.at }
            if lhs.monotonic != rhs.monotonic { return lhs.monotonic < rhs.monotonic }
            if lhs.receivedAt != rhs.receivedAt { return lhs.receivedAt < rhs.receivedAt }
            return lhs.offset > rhs.offset
        }
    }
}
