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
    /// Newest first.
    public var notifications: [DisplayedNotification]
    /// Bundle ID → badge; apps without a badge are absent.
    public var badges: [String: Int]

    public init(notifications: [DisplayedNotification] = [], badges: [String: Int] = [:]) {
        self.notifications = notifications
        self.badges = badges
    }

    /// The view a device shows after `records` (statuses other than `displayed` and `delivered-silent` are
    /// ignored).
    /// - Parameters:
    ///   - records: The device's records, newest first as the repository lists them (the order only breaks
    ///     ties between records shown at the same instant and received at the same millisecond).
    ///   - device: The device, for installed apps; nil shows every app.
    public init(records: [NotificationRecord], device: DeviceRecord?) {
        let apps = Dictionary((device?.apps ?? []).map { ($0.bundleID, $0) }, uniquingKeysWith: { _, last in last })
        let shown = records.enumerated().compactMap { offset, record -> (Shown)? in
            guard record.status == .displayed || record.status == .deliveredSilent,
                let step = record.timeline.last(where: { $0.step == record.status.rawValue })
            else { return nil }
            if let app = apps[record.bundleID] {
                guard app.uninstalledAt == nil, step.at >= app.installedAt else { return nil }
            }
            return Shown(record: record, at: step.at, monotonic: step.monotonic, offset: offset)
        }
        .sorted()

        var rows: [DisplayedNotification?] = []  // nil: replaced by a later one of the same identifier
        var rowIndex: [String: Int] = [:]  // "bundleID NUL identifier" → its position in rows
        var badges: [String: Int] = [:]
        for item in shown {
            let record = item.record
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
            let identifier = record.collapseID ?? record.apnsID
            let key = record.bundleID + "\u{0}" + identifier
            if let replaced = rowIndex[key] { rows[replaced] = nil }
            rowIndex[key] = rows.count
            rows.append(DisplayedNotification(
                apnsID: record.apnsID, bundleID: record.bundleID, identifier: identifier, content: content,
                displayedAt: item.at))
        }
        self.notifications = rows.compactMap { $0 }.reversed()
        self.badges = badges
    }

    /// A record with the time it was shown, ordered by wall time, then monotonic time, then receipt,
    /// then reversed input position.
    private struct Shown: Comparable {
        var record: NotificationRecord
        var at: Int64
        var monotonic: UInt64
        var offset: Int

        static func < (lhs: Shown, rhs: Shown) -> Bool {
            if lhs.at != rhs.at { return lhs.at < rhs.at }
            if lhs.monotonic != rhs.monotonic { return lhs.monotonic < rhs.monotonic }
            if lhs.record.receivedAt != rhs.record.receivedAt { return lhs.record.receivedAt < rhs.record.receivedAt }
            return lhs.offset > rhs.offset
        }

        static func == (lhs: Shown, rhs: Shown) -> Bool {
            lhs.record.apnsID == rhs.record.apnsID && lhs.offset == rhs.offset
        }
    }
}
