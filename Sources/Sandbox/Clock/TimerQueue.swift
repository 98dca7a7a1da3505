// APNs Sandbox — pending timers ordered by deadline, shared by both clocks.

/// Pending tasks by deadline (any unit), in a binary min-heap; ties run in scheduling order.
///
/// Cancelled tasks are removed from the table at once, so their closures are released; their heap slots
/// are skipped lazily and the heap is rebuilt when more than half of it is stale. Not thread-safe: the
/// owning clock keeps it in a `Mutex`.
struct TimerQueue {
    private struct Key: Comparable {
        var deadline: Int64
        var id: UInt64
        static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.deadline, lhs.id) < (rhs.deadline, rhs.id)
        }
    }

    private var heap: [Key] = []
    private var tasks: [UInt64: @Sendable () -> Void] = [:]
    private var nextID: UInt64 = 0

    /// Live (not cancelled, not yet taken) tasks.
    var count: Int { tasks.count }

    /// Adds `task` at `deadline`; returns its id for ``remove(_:)``.
    mutating func insert(deadline: Int64, _ task: @escaping @Sendable () -> Void) -> UInt64 {
        nextID += 1
        tasks[nextID] = task
        push(Key(deadline: deadline, id: nextID))
        return nextID
    }

    /// Drops a task that has not been taken yet.
    mutating func remove(_ id: UInt64) {
        guard tasks.removeValue(forKey: id) != nil else { return }
        if heap.count > 64, heap.count > 2 * tasks.count { rebuild() }
    }

    /// The earliest live deadline.
    mutating func earliestDeadline() -> Int64? {
        dropStaleTop()
        return heap.first?.deadline
    }

    /// Removes and returns the earliest task whose deadline is at or before `limit`.
    mutating func popDue(notAfter limit: Int64) -> (deadline: Int64, task: @Sendable () -> Void)? {
        dropStaleTop()
        guard let top = heap.first, top.deadline <= limit, let task = tasks.removeValue(forKey: top.id) else {
            return nil
        }
        popTop()
        return (top.deadline, task)
    }

    // MARK: Heap

    private mutating func dropStaleTop() {
        while let top = heap.first, tasks[top.id] == nil { popTop() }
    }

    private mutating func rebuild() {
        heap = heap.filter { tasks[$0.id] != nil }.sorted()
    }

    private mutating func push(_ key: Key) {
        heap.append(key)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child] < heap[parent] else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left] < heap[smallest] { smallest = left }
            if right < heap.count, heap[right] < heap[smallest] { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
