// APNs Sandbox — the memory store's event log: a bounded journal in id order.
import Sandbox

/// Events in id order (ids increase from 1 and are never reused), the oldest dropped first.
struct EventJournal: Sendable {
    private var events: [SandboxEvent] = []
    /// `events[..<head]` are gone (dropped); compacted away from time to time.
    private var head = 0
    private(set) var lastID: Int64 = 0
    /// Events dropped to keep the bound.
    var dropped = 0

    var count: Int { events.count - head }
    var oldestID: Int64? { head < events.count ? events[head].id : nil }

    /// Logs `drafts` with the next ids, then drops the oldest beyond `capacity`; returns them as logged.
    mutating func append(_ drafts: [EventDraft], capacity: Int) -> [SandboxEvent] {
        guard !drafts.isEmpty else { return [] }
        var logged: [SandboxEvent] = []
        logged.reserveCapacity(drafts.count)
        for draft in drafts {
            lastID += 1
            logged.append(SandboxEvent(id: lastID, draft: draft))
        }
        events += logged
        if count > capacity {
            let excess = count - capacity
            head += excess
            dropped += excess
            if head > 4096, head > events.count / 2 {
                events.removeFirst(head)
                head = 0
            }
        }
        return logged
    }

    /// Events after `id` that `isIncluded` selects, oldest first, at most `limit`.
    func events(after id: Int64, limit: Int, where isIncluded: (SandboxEvent) -> Bool) -> [SandboxEvent] {
        guard limit > 0 else { return [] }
        // The first event with a greater id: ids increase along the array.
        var low = head
        var high = events.count
        while low < high {
            let middle = (low + high) / 2
            if events[middle].id <= id { low = middle + 1 } else { high = middle }
        }
        var found: [SandboxEvent] = []
        for event in events[low...] where isIncluded(event) {
            found.append(event)
            if found.count == limit { break }
        }
        return found
    }

    /// Removes the events `isRemoved` selects; returns how many.
    mutating func remove(where isRemoved: (SandboxEvent) -> Bool) -> Int {
        let before = count
        events = events[head...].filter { !isRemoved($0) }
        head = 0
        return before - count
    }
}
