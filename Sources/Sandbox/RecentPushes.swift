// APNs Sandbox — the in-memory push record sink: the newest records, bounded.
import Synchronization
import Support

/// Keeps the newest `capacity` pushes in memory (a ``PushLogEntry`` each) and counts all of them.
///
/// The push log of `/api/v1/pushes` (accepted and rejected pushes alike; the delivery layer keeps the
/// accepted ones' records). The lock is held only to swap a record into the ring: the
/// record it replaces is released after the lock is dropped, so event loops recording at the same
/// time barely wait for each other.
public final class RecentPushes: PushRecordSink {
    private struct Ring {
        var records: [PushLogEntry?]
        var next = 0
        var stored = 0
        var accepted = 0
        var rejected = 0
    }

    private let ring: Locked<Ring>
    public let capacity: Int

    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
        self.ring = Locked(Ring(records: Array(repeating: nil, count: max(1, capacity))))
    }

    public func record(_ push: PushRecord) {
        var incoming: PushLogEntry? = PushLogEntry(push)
        let accepted = push.isAccepted
        ring.withLock { ring in
            if accepted { ring.accepted += 1 } else { ring.rejected += 1 }
            swap(&ring.records[ring.next], &incoming)
            ring.next = (ring.next + 1) % ring.records.count
            ring.stored = min(ring.stored + 1, ring.records.count)
        }
        // `incoming` now holds the evicted record, released here, outside the lock.
        _ = incoming
    }

    /// Forgets the records `selected` picks (the order of the others is kept). With `resettingCounts`, the
    /// counts start again from zero (a reset of the whole sandbox); otherwise they keep counting every push.
    public func removeAll(where selected: (PushLogEntry) -> Bool, resettingCounts: Bool = false) {
        var dropped: [PushLogEntry] = []
        ring.withLock { ring in
            let count = ring.records.count
            var kept: [PushLogEntry] = []
            var index = (ring.next - ring.stored + count) % count
            for _ in 0..<ring.stored {
                if let record = ring.records[index] {
                    if selected(record) { dropped.append(record) } else { kept.append(record) }
                }
                ring.records[index] = nil
                index = (index + 1) % count
            }
            for (position, record) in kept.enumerated() { ring.records[position] = record }
            ring.next = kept.count % count
            ring.stored = kept.count
            if resettingCounts {
                ring.accepted = 0
                ring.rejected = 0
            }
        }
        // Released here, outside the lock.
        dropped.removeAll()
    }

    /// Counts since start (or since the last reset of the whole sandbox).
    public var counts: (accepted: Int, rejected: Int) {
        ring.withLock { ($0.accepted, $0.rejected) }
    }

    /// The newest records first, at most `limit`.
    public func newest(_ limit: Int) -> [PushLogEntry] {
        ring.withLock { ring in
            var result: [PushLogEntry] = []
            let count = ring.records.count
            var index = (ring.next - 1 + count) % count
            while result.count < min(limit, ring.stored) {
                if let record = ring.records[index] { result.append(record) }
                index = (index - 1 + count) % count
            }
            return result
        }
    }

    /// The newest records that `selected` picks, newest first, at most `limit` (a scan of the ring).
    public func newest(_ limit: Int, where selected: (PushLogEntry) -> Bool) -> [PushLogEntry] {
        ring.withLock { ring in
            var result: [PushLogEntry] = []
            let count = ring.records.count
            var index = (ring.next - 1 + count) % count
            for _ in 0..<ring.stored where result.count < limit {
                if let record = ring.records[index], selected(record) { result.append(record) }
                index = (index - 1 + count) % count
            }
            return result
        }
    }

    /// The newest record with this apns-id, if it is still held.
    public func find(apnsID: String) -> PushLogEntry? {
        ring.withLock { ring in
            let count = ring.records.count
            var index = (ring.next - 1 + count) % count
            for _ in 0..<ring.stored {
                if let record = ring.records[index], record.apnsID == apnsID { return record }
                index = (index - 1 + count) % count
            }
            return nil
        }
    }
}
