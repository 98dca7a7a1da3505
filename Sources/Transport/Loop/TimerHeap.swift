// APNs Sandbox — the loop's scheduled tasks, ordered by deadline.

/// Identifies a scheduled timer so it can be cancelled.
public struct TimerHandle: Hashable, Sendable {
    let id: UInt64
}

/// A binary min-heap of deadlines; cancelled entries are skipped lazily when they surface.
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var tasks: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 0

    var isEmpty: Bool { tasks.isEmpty }

    var nextDeadline: UInt64? {
        mutating get {
            dropCancelledTop()
            return heap.first?.deadline
        }
    }

    mutating func insert(deadline: UInt64, task: @escaping () -> Void) -> TimerHandle {
        nextID &+= 1
        tasks[nextID] = task
        heap.append(Entry(deadline: deadline, id: nextID))
        siftUp(heap.count - 1)
        return TimerHandle(id: nextID)
    }

    mutating func cancel(_ handle: TimerHandle) {
        tasks[handle.id] = nil
    }

    /// Removes and returns the earliest task whose deadline is at or before `now`.
    mutating func popExpired(now: UInt64) -> (() -> Void)? {
        dropCancelledTop()
        guard let top = heap.first, top.deadline <= now else { return nil }
        removeTop()
        return tasks.removeValue(forKey: top.id)
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, tasks[top.id] == nil { removeTop() }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count && heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
