// APNs Sandbox — pending timers ordered by deadline: the one timer heap.

/// Pending tasks by deadline, in a binary min-heap; ties come out in insertion order.
///
/// Used by every timer owner: the event loop (monotonic nanoseconds, loop-confined closures) and both
/// sandbox clocks (milliseconds or nanoseconds, `@Sendable` closures). The deadline's unit is the owner's.
///
/// Removed tasks leave the table at once, so their closures are released; their heap slots are skipped
/// lazily when they surface, and the heap is rebuilt when more than half of it is stale. Not thread-safe:
/// the owner confines it to one thread or keeps it in a `Locked`.
public struct TimerQueue<Deadline: Comparable, Work> {
    /// Names an inserted task for ``remove(_:)``; never reused within one queue.
    public typealias ID = UInt64

    fileprivate struct Key: Comparable {
        var deadline: Deadline
        var id: ID
        static func < (lhs: Key, rhs: Key) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.id < rhs.id)
        }
    }

    private var heap: [Key] = []
    private var tasks: [ID: Work] = [:]
    private var nextID: ID = 0

    public init() {}

    /// Live (neither removed nor taken) tasks.
    public var count: Int { tasks.count }

    public var isEmpty: Bool { tasks.isEmpty }

    /// Adds `task` at `deadline`.
    /// - Returns: Its id, for ``remove(_:)``.
    public mutating func insert(deadline: Deadline, _ task: Work) -> ID {
        nextID &+= 1
        tasks[nextID] = task
        push(Key(deadline: deadline, id: nextID))
        return nextID
    }

    /// Drops a task that has not been taken yet; a no-op for one already taken or removed.
    public mutating func remove(_ id: ID) {
        guard tasks.removeValue(forKey: id) != nil else { return }
        if heap.count > 64, heap.count > 2 * tasks.count { rebuild() }
    }

    /// The earliest live deadline.
    public mutating func earliestDeadline() -> Deadline? {
        dropStaleTop()
        return heap.first?.deadline
    }

    /// Removes and returns the earliest task whose deadline is at or before `limit`.
    public mutating func popDue(notAfter limit: Deadline) -> (deadline: Deadline, task: Work)? {
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

    /// A sorted array is a valid min-heap.
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

extension TimerQueue: Sendable where Deadline: Sendable, Work: Sendable {}
extension TimerQueue.Key: Sendable where Deadline: Sendable {}
