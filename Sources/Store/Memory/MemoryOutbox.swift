// APNs Sandbox — the webhook outbox in memory (the `memory` storage mode, for load tests: nothing on disk).
import Events
import Synchronization
import Support

/// ``WebhookRepository`` kept in memory, with the observable behaviour of ``SQLiteStore``'s outbox: the same
/// orderings, cursors, statuses, attempt logs, ids (increasing from 1, never reused) and pruning.
///
/// Thread-safe: every call takes one lock around the whole state, so each call is atomic as SQLite's
/// transaction is. Nothing is durable: the outbox lives as long as the process.
///
/// Memory is bounded by `maxDeliveries`: when more deliveries are kept, the ones that finished longest ago
/// (succeeded or failed, in the order their last attempt was recorded) are dropped, counted in
/// ``droppedDeliveries``. Pending deliveries are never dropped, so the count may stay above the bound while
/// they wait. Apart from that, deliveries go away only through ``pruneDeliveries(finishedBefore:)`` and
/// ``deleteSubscription(id:)``, as in SQLite.
public final class MemoryOutbox: WebhookRepository {
    /// Most deliveries kept before finished ones are dropped.
    public let maxDeliveries: Int
    let state: Locked<State>

    public init(maxDeliveries: Int = 1_000_000) {
        self.maxDeliveries = max(0, maxDeliveries)
        state = Locked(State())
    }

    /// Finished deliveries dropped so far to stay within `maxDeliveries` (prunes and deletions not counted).
    public var droppedDeliveries: Int { state.withLock { $0.dropped } }

    /// Deliveries kept now (pending and finished).
    public var deliveryCount: Int { state.withLock { $0.deliveries.count } }

    /// Always healthy: there is no file to fill up or damage.
    public var health: StoreHealth { .healthy }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { state.withLock { $0.isClosed } }

    /// Keeps `observer` (nil removes it), as ``SQLiteStore/observeCommits(_:)`` does. Memory has no commits
    /// (no transaction, no fsync), so it is never called: the commit-latency metric stays empty.
    public func observeCommits(_ observer: (@Sendable (Double) -> Void)?) {
        state.withLock { $0.commitObserver = observer }
    }

    /// Drops everything; later calls fail with `closed` (``StoreError/Code/closed``). Safe to call more than once.
    public func close() {
        state.withLock { state in
            let dropped = state.dropped
            state = State()
            state.dropped = dropped
            state.isClosed = true
        }
    }

    // MARK: Subscriptions

    public func saveSubscription(_ subscription: WebhookSubscription, cursor: Int64) throws {
        try state.withLock { state in
            try state.checkOpen()
            let key = SubscriptionKey(subscription.id)
            if state.subscriptions[key] != nil {
                // As `ON CONFLICT DO UPDATE SET record`: the cursor and the ordering's created_at are kept.
                state.subscriptions[key]?.record = subscription
            } else {
                state.subscriptions[key] = StoredSubscription(
                    record: subscription, cursor: cursor, createdAt: subscription.createdAt)
            }
        }
    }

    public func updateSubscription(_ subscription: WebhookSubscription) throws -> Bool {
        try state.withLock { state in
            try state.checkOpen()
            let key = SubscriptionKey(subscription.id)
            guard state.subscriptions[key] != nil else { return false }
            state.subscriptions[key]?.record = subscription
            return true
        }
    }

    /// Ordered as SQLite's `ORDER BY created_at, id`: the `createdAt` the subscription was first saved with
    /// (re-saves and updates do not move it), then the id's UTF-8 bytes (SQLite's BINARY collation).
    public func subscriptions() throws -> [(subscription: WebhookSubscription, cursor: Int64)] {
        try state.withLock { state in
            try state.checkOpen()
            return state.subscriptions.values.sorted { a, b in
                if a.createdAt != b.createdAt { return a.createdAt < b.createdAt }
                return a.record.id.utf8.lexicographicallyPrecedes(b.record.id.utf8)
            }.map { ($0.record, $0.cursor) }
        }
    }

    /// Moves every subscription cursor beyond `latest` back to it (see ``SQLiteStore/clampSubscriptionCursors(to:)``).
    /// - Returns: How many cursors moved.
    @discardableResult
    public func clampSubscriptionCursors(to latest: Int64) throws -> Int {
        try state.withLock { state in
            try state.checkOpen()
            let beyond = state.subscriptions.compactMap { $0.value.cursor > latest ? $0.key : nil }
            for key in beyond { state.subscriptions[key]?.cursor = latest }
            return beyond.count
        }
    }

    @discardableResult
    public func deleteSubscription(id: String) throws -> Bool {
        try state.withLock { state in
            try state.checkOpen()
            guard let removed = state.subscriptions.removeValue(forKey: SubscriptionKey(id)) else { return false }
            for deliveryID in removed.deliveryIDs.ascending {
                guard let stored = state.deliveries.removeValue(forKey: deliveryID) else { continue }
                state.forget(stored.delivery)
            }
            state.compactFinishedQueue()
            return true
        }
    }

    /// Deliveries waiting for a retry: pending after at least one failed attempt (the webhook retry backlog).
    public func retryingDeliveryCount() throws -> Int {
        try state.withLock { state in
            try state.checkOpen()
            return state.retrying
        }
    }
}

// MARK: - State

extension MemoryOutbox {
    /// A subscription id compared and hashed by its UTF-8 bytes, as SQLite's TEXT primary key is (Swift's `==`
    /// would take a precomposed `é` and `e` + combining accent for the same id).
    struct SubscriptionKey: Hashable {
        let id: String

        init(_ id: String) { self.id = id }

        static func == (a: SubscriptionKey, b: SubscriptionKey) -> Bool { a.id.utf8.elementsEqual(b.id.utf8) }

        func hash(into hasher: inout Hasher) {
            let hashed: Void? = id.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            if hashed == nil {
                for byte in id.utf8 { hasher.combine(byte) }
            }
            hasher.combine(id.utf8.count)
        }
    }

    /// Where a pending delivery stands in its subscription's due order: SQLite's `ORDER BY next_attempt_at, id`.
    struct DueKey: Comparable {
        let at: Int64
        let id: Int64

        static func < (a: DueKey, b: DueKey) -> Bool { (a.at, a.id) < (b.at, b.id) }
    }

    struct StoredSubscription {
        var record: WebhookSubscription
        var cursor: Int64
        /// The `created_at` column: the first save's, which the ordering of ``subscriptions()`` uses.
        let createdAt: Int64
        /// Every delivery's id, ascending (ids only grow, so new ones are appended); may also hold `staleIDs`
        /// ids of deliveries dropped over the bound, skipped by the listing and removed in bulk.
        var deliveryIDs = SortedKeys<Int64>()
        var staleIDs = 0
        /// The pending deliveries with a next attempt time, by that time then id.
        var due = SortedKeys<DueKey>()
    }

    struct StoredDelivery {
        var delivery: WebhookDelivery
        /// For a finished delivery: its place in ``State/finishedQueue`` (a newer attempt gives it a new one).
        var finishSequence: UInt64?
    }

    struct State {
        var isClosed = false
        var commitObserver: (@Sendable (Double) -> Void)?
        var subscriptions: [SubscriptionKey: StoredSubscription] = [:]
        var deliveries: [Int64: StoredDelivery] = [:]
        /// SQLite's AUTOINCREMENT sequence: the last id given (ids are never reused).
        var lastDeliveryID: Int64 = 0
        /// Pending deliveries with at least one attempt.
        var retrying = 0
        /// Finished deliveries kept.
        var finishedCount = 0
        /// Finished deliveries in the order they finished, oldest first from `finishedHead`; entries whose
        /// sequence no longer matches the delivery's (pruned, deleted, attempted again) are stale and skipped.
        var finishedQueue: [(sequence: UInt64, id: Int64)] = []
        var finishedHead = 0
        var lastFinishSequence: UInt64 = 0
        var dropped = 0

        func checkOpen() throws {
            if isClosed { throw StoreError.closed() }
        }
    }
}
