// APNs Sandbox — MemoryOutbox's deliveries: enqueueing, due ones, attempts, listing, pruning and the bound.
import Events

extension MemoryOutbox {
    public func enqueueDeliveries(
        _ deliveries: [NewWebhookDelivery], cursors: [String: Int64], at now: Int64
    ) throws -> [WebhookDelivery] {
        guard !deliveries.isEmpty || !cursors.isEmpty else { return [] }
        let maxDeliveries = maxDeliveries
        return try state.withLock { state in
            try state.checkOpen()
            var created: [WebhookDelivery] = []
            created.reserveCapacity(deliveries.count)
            for new in deliveries {
                let key = SubscriptionKey(new.subscriptionID)
                // A subscription deleted meanwhile gets no deliveries (nothing would ever remove them).
                guard state.subscriptions[key] != nil else { continue }
                state.lastDeliveryID += 1
                let delivery = WebhookDelivery(
                    id: state.lastDeliveryID, subscriptionID: new.subscriptionID, eventID: new.eventID,
                    messageID: new.messageID, eventType: new.eventType, payload: new.payload, status: .pending,
                    nextAttemptAt: new.nextAttemptAt, createdAt: now, updatedAt: now)
                state.deliveries[delivery.id] = StoredDelivery(delivery: delivery)
                state.subscriptions[key]?.deliveryIDs.insert(delivery.id)
                state.subscriptions[key]?.due.insert(DueKey(at: new.nextAttemptAt, id: delivery.id))
                created.append(delivery)
            }
            for (id, cursor) in cursors {
                let key = SubscriptionKey(id)
                guard let old = state.subscriptions[key]?.cursor, cursor > old else { continue }
                state.subscriptions[key]?.cursor = cursor
            }
            state.dropFinished(over: maxDeliveries)
            return created
        }
    }

    /// Pending deliveries due at `now`, by next attempt time then id; reads only the subscription's own due
    /// order, from its start, so it costs the due ones returned plus the excluded ones it passes.
    public func dueDeliveries(
        subscriptionID: String, now: Int64, excluding: Set<Int64>, limit: Int
    ) throws -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        return try state.withLock { state in
            try state.checkOpen()
            guard let subscription = state.subscriptions[SubscriptionKey(subscriptionID)] else { return [] }
            var due: [WebhookDelivery] = []
            for key in subscription.due.ascending {
                guard key.at <= now, due.count < limit else { break }
                guard !excluding.contains(key.id), let stored = state.deliveries[key.id] else { continue }
                due.append(stored.delivery)
            }
            return due
        }
    }

    public func recordAttempts(_ results: [WebhookAttemptResult], at now: Int64) throws {
        guard !results.isEmpty else { return }
        let maxDeliveries = maxDeliveries
        try state.withLock { state in
            try state.checkOpen()
            for result in results { state.record(result, at: now) }
            state.dropFinished(over: maxDeliveries)
            state.compactFinishedQueue()
        }
    }

    public func deliveries(
        subscriptionID: String, status: WebhookDeliveryStatus?, limit: Int, beforeID: Int64?
    ) throws -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        return try state.withLock { state in
            try state.checkOpen()
            guard let subscription = state.subscriptions[SubscriptionKey(subscriptionID)] else { return [] }
            var page: [WebhookDelivery] = []
            // `id < beforeID`, with SQLite's default of Int64.max when there is none.
            for id in subscription.deliveryIDs.descending(below: beforeID ?? Int64.max) {
                guard let stored = state.deliveries[id] else { continue }
                guard status == nil || stored.delivery.status == status else { continue }
                page.append(stored.delivery)
                if page.count == limit { break }
            }
            return page
        }
    }

    public func delivery(id: Int64) throws -> WebhookDelivery? {
        try state.withLock { state in
            try state.checkOpen()
            return state.deliveries[id]?.delivery
        }
    }

    /// Reads every delivery, as SQLite's `DELETE … WHERE status != 'pending' AND updated_at < ?` does (no index
    /// on the update time); it runs on the retention schedule, not per delivery.
    @discardableResult
    public func pruneDeliveries(finishedBefore cutoff: Int64) throws -> Int {
        try state.withLock { state in
            try state.checkOpen()
            var doomed: [SubscriptionKey: Set<Int64>] = [:]
            var count = 0
            for (id, stored) in state.deliveries
            where stored.delivery.status != .pending && stored.delivery.updatedAt < cutoff {
                doomed[SubscriptionKey(stored.delivery.subscriptionID), default: []].insert(id)
                count += 1
            }
            guard count > 0 else { return 0 }
            for (key, ids) in doomed {
                // Finished deliveries are in no due order: only the id lists change.
                for id in ids { state.deliveries[id] = nil }
                state.removeStaleIDs(of: key)
            }
            state.finishedCount -= count
            state.compactFinishedQueue()
            return count
        }
    }
}

extension MemoryOutbox.State {
    typealias DueKey = MemoryOutbox.DueKey

    /// Appends one attempt to its delivery and sets its status (nothing when there is no such delivery,
    /// as SQLite's `UPDATE … WHERE id = ?`).
    mutating func record(_ result: WebhookAttemptResult, at now: Int64) {
        guard var stored = deliveries[result.deliveryID] else { return }
        let key = MemoryOutbox.SubscriptionKey(stored.delivery.subscriptionID)
        leave(stored.delivery, subscription: key)
        stored.delivery.status = result.status
        stored.delivery.attempts.append(result.attempt)
        stored.delivery.nextAttemptAt = result.nextAttemptAt
        stored.delivery.updatedAt = now
        if result.status == .pending {
            stored.finishSequence = nil
            // Pending with no next attempt time: never due (SQL's `NULL <= now` is not true), still retrying.
            if let at = result.nextAttemptAt {
                subscriptions[key]?.due.insert(DueKey(at: at, id: result.deliveryID))
            }
            retrying += 1
        } else {
            lastFinishSequence += 1
            stored.finishSequence = lastFinishSequence
            finishedQueue.append((lastFinishSequence, result.deliveryID))
            finishedCount += 1
        }
        deliveries[result.deliveryID] = stored
    }

    /// Takes a delivery out of its due order and the counters (before it changes or is deleted).
    private mutating func leave(_ delivery: WebhookDelivery, subscription key: MemoryOutbox.SubscriptionKey) {
        if delivery.status == .pending {
            if let at = delivery.nextAttemptAt { subscriptions[key]?.due.remove(DueKey(at: at, id: delivery.id)) }
            if !delivery.attempts.isEmpty { retrying -= 1 }
        } else {
            finishedCount -= 1
        }
    }

    /// Takes a delivery already removed from `deliveries` out of the counters (its subscription is gone too).
    mutating func forget(_ delivery: WebhookDelivery) {
        if delivery.status == .pending {
            if !delivery.attempts.isEmpty { retrying -= 1 }
        } else {
            finishedCount -= 1
        }
    }

    /// Drops the deliveries that finished longest ago while more than `limit` are kept; never pending ones.
    mutating func dropFinished(over limit: Int) {
        while deliveries.count > limit, finishedHead < finishedQueue.count {
            let entry = finishedQueue[finishedHead]
            finishedHead += 1
            guard let stored = deliveries[entry.id], stored.finishSequence == entry.sequence else { continue }
            let key = MemoryOutbox.SubscriptionKey(stored.delivery.subscriptionID)
            deliveries[entry.id] = nil
            // Its id stays in the subscription's list until there are many such (listing skips them):
            // removing each from the middle of a long list would cost its length.
            subscriptions[key]?.staleIDs += 1
            if let subscription = subscriptions[key], subscription.staleIDs > subscription.deliveryIDs.count / 2 + 64 {
                removeStaleIDs(of: key)
            }
            finishedCount -= 1
            dropped += 1
        }
        compactFinishedQueue()
    }

    /// Removes from a subscription's id list the deliveries that no longer exist.
    mutating func removeStaleIDs(of key: MemoryOutbox.SubscriptionKey) {
        guard var ids = subscriptions[key]?.deliveryIDs else { return }
        subscriptions[key]?.deliveryIDs = SortedKeys()
        ids.removeAll { deliveries[$0] == nil }
        subscriptions[key]?.deliveryIDs = ids
        subscriptions[key]?.staleIDs = 0
    }

    /// Keeps the finished queue's stale entries (and its consumed head) from outgrowing the finished deliveries.
    mutating func compactFinishedQueue() {
        if finishedQueue.count - finishedHead > 2 * finishedCount + 1024 {
            finishedQueue = finishedQueue[finishedHead...].filter { deliveries[$0.id]?.finishSequence == $0.sequence }
            finishedHead = 0
        } else if finishedHead > 1024, finishedHead * 2 > finishedQueue.count {
            finishedQueue.removeSubrange(0..<finishedHead)
            finishedHead = 0
        }
    }
}

/// Unique keys kept ascending in an array with a consumed front (`head`): appending a key above the others
/// is O(1); an insertion or removal moves the shorter side of the array (removals near the front, the usual
/// case for due deliveries, only move the few keys before them).
struct SortedKeys<Key: Comparable & BitwiseCopyable> {
    private var storage: [Key] = []
    private var head = 0

    var count: Int { storage.count - head }

    var ascending: ArraySlice<Key> { storage[head...] }

    /// The keys below `key`, largest first.
    func descending(below key: Key) -> ReversedCollection<ArraySlice<Key>> {
        storage[head..<lowerBound(key)].reversed()
    }

    /// The index of the first key not below `key` (`storage.count` when there is none).
    private func lowerBound(_ key: Key) -> Int {
        var low = head
        var high = storage.count
        while low < high {
            let middle = low + (high - low) / 2
            if storage[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    mutating func insert(_ key: Key) {
        guard let last = storage.last, head < storage.count, !(last < key) else {
            storage.append(key)
            return
        }
        let position = lowerBound(key)
        if position < storage.count, storage[position] == key { return }
        if head > 0, position - head < storage.count - position {
            // Move the keys before it one step into the consumed front.
            head -= 1
            move(from: head + 1, to: head, count: position - 1 - head)
            storage[position - 1] = key
        } else {
            storage.insert(key, at: position)
        }
    }

    @discardableResult
    mutating func remove(_ key: Key) -> Bool {
        let position = lowerBound(key)
        guard position < storage.count, storage[position] == key else { return false }
        if position - head < storage.count - position - 1 {
            // Move the keys before it one step back and consume the front.
            move(from: head, to: head + 1, count: position - head)
            head += 1
            if head > 1024, head * 2 > storage.count {
                storage.removeSubrange(0..<head)
                head = 0
            }
        } else {
            storage.remove(at: position)
        }
        return true
    }

    /// Moves `count` keys within the storage (a memmove: the ranges may overlap).
    private mutating func move(from source: Int, to destination: Int, count: Int) {
        guard count > 0 else { return }
        storage.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            UnsafeMutableRawPointer(base + destination)
                .copyMemory(from: base + source, byteCount: count * MemoryLayout<Key>.stride)
        }
    }

    mutating func removeAll(where shouldRemove: (Key) -> Bool) {
        storage.removeSubrange(0..<head)
        head = 0
        storage.removeAll(where: shouldRemove)
    }
}
