// APNs Sandbox — what the server needs of its stores, whichever `storage.mode` keeps them.
import Events
import Sandbox

/// The main store: notifications, devices and apps, the event log, resets and pruning. ``SQLiteStore`` keeps
/// it in a file (`storage.mode` `durable`), ``MemoryStore`` in a bounded journal in memory (`memory`).
public protocol SandboxStore: NotificationRepository, DeviceRepository, EventLogRepository {
    /// Whether a notification with this apns-id exists on `deviceToken` (on any device when nil).
    func containsNotification(apnsID: String, deviceToken: String?) throws -> Bool
    /// Carries out `reset` in one step that readers see whole or not at all (``SQLiteStore/reset(_:committed:)``).
    @discardableResult
    func reset(_ reset: StoreReset, committed: @escaping @Sendable (StoreResetOutcome) -> Void) throws -> StoreResetOutcome
    /// Deletes final records received before `cutoff`, then the oldest final ones beyond `maxRecords`.
    func prune(
        keepingAtMost maxRecords: Int, receivedBefore cutoff: Int64, removed: ([NotificationKey]) -> Void
    ) throws -> (expired: Int, overflow: Int)
    /// Deletes events older than `cutoff` and beyond the newest `maxEvents`, never one above `floor`.
    @discardableResult
    func pruneEvents(maxEvents: Int, olderThan cutoff: Int64, keepingAbove floor: Int64) throws -> Int
    @discardableResult
    func deleteApp(bundleID: String) throws -> Bool
    /// The one observer of logged events (SSE, webhooks), called in id order after they are kept.
    func observeEvents(_ observer: (@Sendable ([SandboxEvent]) -> Void)?)
    /// The one observer of commit durations in seconds (none in memory).
    func observeCommits(_ observer: (@Sendable (Double) -> Void)?)
    var health: StoreHealth { get }
    /// Whether ``close()`` has been called.
    var isClosed: Bool { get }
    func close()
}

extension SandboxStore {
    @discardableResult
    public func reset(_ reset: StoreReset) throws -> StoreResetOutcome {
        try self.reset(reset, committed: { _ in })
    }
}

/// The webhook outbox: subscriptions, their cursors and deliveries. ``SQLiteStore`` keeps it in
/// `webhooks.sqlite`, ``MemoryOutbox`` in memory.
public protocol OutboxStore: WebhookRepository {
    /// Moves every cursor past `latest` back to it; returns how many moved.
    func clampSubscriptionCursors(to latest: Int64) throws -> Int
    /// Deliveries waiting for a retry (pending after at least one failed attempt).
    func retryingDeliveryCount() throws -> Int
    func observeCommits(_ observer: (@Sendable (Double) -> Void)?)
    var health: StoreHealth { get }
    /// Whether ``close()`` has been called.
    var isClosed: Bool { get }
    func close()
}

extension SQLiteStore: SandboxStore, OutboxStore {}
extension MemoryStore: SandboxStore {}
extension MemoryOutbox: OutboxStore {}
