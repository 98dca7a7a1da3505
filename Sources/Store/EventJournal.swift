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
            var event = SandboxEvent(id: lastID, draft: draft)
            event.data = Self.compact(event.data)
            logged.append(event)
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

    /// `data` in a buffer of its own size: an event is kept a while, and its JSON was written into room reserved for
    /// any event of its type (512 bytes and more, 1 KB once grown): 50,000 kept events held about 30 MB of room.
    static func compact(_ data: [UInt8]) -> [UInt8] {
        guard data.capacity > data.count + 64 else { return data }
        return [UInt8](unsafeUninitializedCapacity: data.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: data)
        }
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
