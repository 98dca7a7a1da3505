// APNs Sandbox — the in-memory push record sink: the newest records, bounded.
import Synchronization

/// Keeps the newest `capacity` push records in memory and counts all of them.
///
/// The stand-in for the durable store until the delivery layer lands; tests and the
/// `/api/v1/pushes` endpoint read it.
public final class RecentPushes: PushRecordSink {
    private struct State {
        var ring: [PushRecord] = []
        var next = 0
        var accepted = 0
        var rejected = 0
    }

    private let state = Mutex(State())
    public let capacity: Int

    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    public func record(_ push: PushRecord) {
        state.withLock { state in
            if push.isAccepted { state.accepted += 1 } else { state.rejected += 1 }
            if state.ring.count < capacity {
                state.ring.append(push)
            } else {
                state.ring[state.next] = push
            }
            state.next = (state.next + 1) % capacity
        }
    }

    /// Counts since start.
    public var counts: (accepted: Int, rejected: Int) {
        state.withLock { ($0.accepted, $0.rejected) }
    }

    /// The newest records first, at most `limit`.
    public func newest(_ limit: Int) -> [PushRecord] {
        state.withLock { state in
            guard !state.ring.isEmpty else { return [] }
            var result: [PushRecord] = []
            var index = (state.next - 1 + state.ring.count) % state.ring.count
            while result.count < min(limit, state.ring.count) {
                result.append(state.ring[index])
                index = (index - 1 + state.ring.count) % state.ring.count
            }
            return result
        }
    }

    /// The record with this apns-id, if it is still held.
    public func find(apnsID: String) -> PushRecord? {
        state.withLock { $0.ring.last { $0.apnsID == apnsID } }
    }
}
