// APNs Sandbox — what the device sandbox needs from storage (the Store module implements it).
import APNsProtocol

/// Which notifications a query or a delete covers. Nil fields match everything.
public struct NotificationFilter: Sendable, Equatable {
    public var deviceToken: String?
    public var topic: String?
    public var bundleID: String?
    public var status: NotificationStatus?
    /// Received at or after (wall-clock ms).
    public var since: Int64?
    /// Created after this cursor (``NotificationRepository/latestCursor()`` at some earlier moment): the
    /// records that are new since then, whatever their clocks say.
    public var after: Int64?
    /// Received strictly before (wall-clock ms): the paging cursor going back in time.
    public var until: Int64?
    /// Any of these statuses (with more than one; a single one is ``status``).
    public var statuses: [NotificationStatus]?
    /// Free text (case-insensitive): an apns-id or device-token prefix, or text in the topic, the bundle
    /// id, the displayed title, subtitle or body, or the payload.
    public var search: String?
    /// Any of these push types (`alert`, `background`, …, as recorded).
    public var pushTypes: [String]?
    /// Any of these extension outcomes.
    public var outcomes: [DisplayOutcome]?

    public init(deviceToken: String? = nil, topic: String? = nil, bundleID: String? = nil,
                status: NotificationStatus? = nil, since: Int64? = nil, after: Int64? = nil) {
        self.after = after
        self.deviceToken = deviceToken
        self.topic = topic
        self.bundleID = bundleID
        self.status = status
        self.since = since
    }
}

/// Durable notifications. Implementations must be safe from any thread.
public protocol NotificationRepository: Sendable {
    /// Stores new records durably (or replaces records with the same apns-id) and calls
    /// `completion` once they are committed. Writes from many callers are batched into one
    /// transaction (group commit); `completion` may run on the store's own thread.
    func save(_ records: [NotificationRecord], completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
    /// As ``save(_:completion:)``, and appends `events` to the event log in the same transaction (so a
    /// status change and its event are durable together). Stores without an event log ignore `events`.
    func save(
        _ records: [NotificationRecord], events: [EventDraft],
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
    /// The notification with this apns-id on `deviceToken`, or, without a device, the newest with this
    /// apns-id (one apns-id may name pushes to several devices); nil when there is none.
    func notification(apnsID: String, deviceToken: String?) throws -> NotificationRecord?
    /// Records matching `filter`, newest first (by `receivedAt`, then insertion order), at most `limit`,
    /// skipping the first `offset`.
    func notifications(matching filter: NotificationFilter, limit: Int, offset: Int) throws -> [NotificationRecord]
    /// How many records match.
    func count(matching filter: NotificationFilter) throws -> Int
    /// A cursor for "records created from now on": every record created later has a greater one, and
    /// `NotificationFilter.after` selects them. 0 before the first record.
    func latestCursor() throws -> Int64
    /// Records whose status is not final (to resume after a restart), oldest first.
    func unfinished() throws -> [NotificationRecord]
    /// Deletes matching records; returns which (their attachment files are the caller's to remove).
    @discardableResult
    func deleteNotifications(matching filter: NotificationFilter) throws -> [NotificationKey]
    /// Keeps at most `maxRecords` (newest) and none older than `maxAgeMilliseconds` (final ones only).
    @discardableResult
    func prune(maxRecords: Int, olderThan cutoff: Int64) throws -> Int
}

extension NotificationRepository {
    public func save(
        _ records: [NotificationRecord], events: [EventDraft],
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        save(records, completion: completion)
    }

    /// Deletes matching records; returns how many.
    @discardableResult
    public func delete(matching filter: NotificationFilter) throws -> Int {
        try deleteNotifications(matching: filter).count
    }

    /// The newest notification with this apns-id, on any device.
    public func notification(apnsID: String) throws -> NotificationRecord? {
        try notification(apnsID: apnsID, deviceToken: nil)
    }
}

/// What names a notification: an apns-id on a device (one apns-id may go to several devices).
public struct NotificationKey: Sendable, Hashable {
    public var apnsID: String
    public var deviceToken: String

    public init(apnsID: String, deviceToken: String) {
        self.apnsID = apnsID
        self.deviceToken = deviceToken
    }
}

/// A device as stored.
public struct DeviceRecord: Sendable, Codable, Equatable {
    public var token: String
    public var environment: APNsEnvironment
    public var locale: String
    public var isOnline: Bool
    /// Installed apps: bundle ID → install/uninstall times (ms).
    public var apps: [InstalledAppRecord]
    /// Per-app keys for the device keychain (e.g. AES-256-GCM keys for the decrypt step), base64.
    public var keys: [String: String]
    public var createdAt: Int64
    public var isAutoRegistered: Bool
    /// For a device of the configuration file: a fingerprint of the file's entry as last applied. A start
    /// with the same entry keeps what the API changed since; a changed entry is applied again.
    public var configuredAs: String?

    public init(token: String, environment: APNsEnvironment, locale: String = "en_US", isOnline: Bool = true,
                apps: [InstalledAppRecord] = [], keys: [String: String] = [:], createdAt: Int64 = 0,
                isAutoRegistered: Bool = false, configuredAs: String? = nil) {
        self.configuredAs = configuredAs
        self.token = token
        self.environment = environment
        self.locale = locale
        self.isOnline = isOnline
        self.apps = apps
        self.keys = keys
        self.createdAt = createdAt
        self.isAutoRegistered = isAutoRegistered
    }
}

public struct InstalledAppRecord: Sendable, Codable, Equatable {
    public var bundleID: String
    public var installedAt: Int64
    public var uninstalledAt: Int64?
    /// The app's badge as the device shows it.
    public var badge: Int?

    public init(bundleID: String, installedAt: Int64, uninstalledAt: Int64? = nil, badge: Int? = nil) {
        self.bundleID = bundleID
        self.installedAt = installedAt
        self.uninstalledAt = uninstalledAt
        self.badge = badge
    }
}

/// An app as stored: its team, its localized strings, its service extension settings.
public struct AppRecord: Sendable, Codable, Equatable {
    public var bundleID: String
    public var teamID: String
    /// Localizable.strings per language: `["en": ["GREETING": "Hello %@"], "fr": […]]`.
    public var strings: [String: [String: String]]
    /// Service extension configuration as JSON text (the extension issue defines it); nil = none.
    public var serviceExtensionJSON: String?
    /// For an app of the configuration file's `apps`: a fingerprint of the file's entry as last applied. A
    /// start with the same entry keeps what the API changed since; a changed entry is applied again.
    public var configuredAs: String?

    public init(bundleID: String, teamID: String, strings: [String: [String: String]] = [:],
                serviceExtensionJSON: String? = nil, configuredAs: String? = nil) {
        self.configuredAs = configuredAs
        self.bundleID = bundleID
        self.teamID = teamID
        self.strings = strings
        self.serviceExtensionJSON = serviceExtensionJSON
    }
}

/// What ``DeviceRepository/modifyDevice(token:_:committed:)`` does with a device.
public enum DeviceChange: Sendable {
    case keep
    /// Creates or replaces it (the record's token is the one modified).
    case save(DeviceRecord)
    case delete
}

/// A device before and after ``DeviceRepository/modifyDevice(token:_:committed:)``.
public struct DeviceModification: Sendable {
    public var before: DeviceRecord?
    public var after: DeviceRecord?

    public init(before: DeviceRecord?, after: DeviceRecord?) {
        self.before = before
        self.after = after
    }
}

/// Durable devices and apps. Implementations must be safe from any thread; writes are durable
/// when they return.
public protocol DeviceRepository: Sendable {
    func saveDevice(_ device: DeviceRecord) throws
    /// Adds `device` unless a device with its token exists, without waiting: the write is queued now and
    /// committed no later than any notification saved after this call (a push's auto-registered device is
    /// durable no later than the push). Reads see the device from the moment this returns.
    /// `completion` says whether it was added, once committed.
    func registerDevice(_ device: DeviceRecord, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void)
    /// Reads the device with `token`, lets `change` say what becomes of it, writes that and commits, as one
    /// step no other write interleaves with: read-modify-write without a lock held across the commit.
    /// `committed` gets the records before and after right after the commit, before any later write
    /// completes, so in-memory copies kept in step there stay in commit order (it must be quick and must
    /// not wait for the store). What `change` throws is rethrown; nothing is written then.
    /// - Returns: The records before and after (equal when `change` kept it).
    func modifyDevice(
        token: String, _ change: @escaping @Sendable (DeviceRecord?) throws -> DeviceChange,
        committed: @escaping @Sendable (_ before: DeviceRecord?, _ after: DeviceRecord?) -> Void
    ) throws -> DeviceModification
    func device(token: String) throws -> DeviceRecord?
    func devices(limit: Int, offset: Int) throws -> [DeviceRecord]
    /// Every device in the order of ``devices(limit:offset:)``, read in one pass (at start, a snapshot): paging
    /// with an offset would read the devices before each page again. `body` must not call the store (the SQLite
    /// store holds its reader connection for the whole pass: other reads wait, and one from `body` would never run).
    func forEachDevice(_ body: (DeviceRecord) throws -> Void) throws
    /// The devices after `cursor` (0: from the first) in the order of ``devices(limit:offset:)``, at most `limit`
    /// (at least 1), the cursor to read on from (nil: there are no more), and how many stored devices of the batch
    /// could not be read (left out). Each call is one short read: a device deleted meanwhile is not returned, one
    /// added meanwhile comes in a later batch. The default reads every device in one batch (a store in memory).
    func devices(after cursor: Int64, limit: Int) throws -> (records: [DeviceRecord], next: Int64?, unreadable: Int)
    /// At least the number of devices, found without reading them all (to size tables before loading them):
    /// SQLite's largest rowid, which deletes leave behind.
    func deviceCountBound() throws -> Int
    @discardableResult
    func deleteDevice(token: String) throws -> Bool
    func saveApp(_ app: AppRecord) throws
    func app(bundleID: String) throws -> AppRecord?
    func apps() throws -> [AppRecord]
}

extension DeviceRepository {
    public func devices(after cursor: Int64, limit: Int) throws -> (records: [DeviceRecord], next: Int64?, unreadable: Int) {
        guard cursor == 0 else { return ([], nil, 0) }
        var records: [DeviceRecord] = []
        try forEachDevice { records.append($0) }
        return (records, nil, 0)
    }
}
