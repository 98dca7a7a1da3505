// APNs Sandbox — the timer heap behind the event loop and both sandbox clocks.
import Support
import Testing

@Suite struct TimerQueueTests {
    /// Tasks come out by deadline, ties in insertion order, and only once due.
    @Test func popsByDeadlineThenInsertionOrder() {
        var queue = TimerQueue<Int64, String>()
        _ = queue.insert(deadline: 30, "c")
        _ = queue.insert(deadline: 10, "a")
        _ = queue.insert(deadline: 10, "b")
        _ = queue.insert(deadline: 20, "bb")
        #expect(queue.count == 4)
        #expect(queue.earliestDeadline() == 10)
        #expect(queue.popDue(notAfter: 9) == nil)
        var popped: [String] = []
        while let (_, task) = queue.popDue(notAfter: 25) { popped.append(task) }
        #expect(popped == ["a", "b", "bb"])
        #expect(queue.earliestDeadline() == 30)
        #expect(queue.popDue(notAfter: .max)?.task == "c")
        #expect(queue.isEmpty && queue.earliestDeadline() == nil)
    }

    /// A removed task never comes out and is not counted; removing twice, or after it was taken, is harmless.
    @Test func removedTasksAreSkipped() {
        var queue = TimerQueue<UInt64, Int>()
        let first = queue.insert(deadline: 1, 1)
        let second = queue.insert(deadline: 2, 2)
        queue.remove(first)
        queue.remove(first)
        #expect(queue.count == 1)
        #expect(queue.earliestDeadline() == 2)
        #expect(queue.popDue(notAfter: 5)?.task == 2)
        queue.remove(second)
        #expect(queue.isEmpty)
    }

    /// Many removals (the heap is rebuilt when mostly stale) keep the order of what is left.
    @Test func orderSurvivesRebuilds() {
        var queue = TimerQueue<Int64, Int64>()
        var ids: [(Int64, TimerQueue<Int64, Int64>.ID)] = []
        for deadline in (0..<1000).map({ Int64(($0 * 7919) % 1000) }) {
            ids.append((deadline, queue.insert(deadline: deadline, deadline)))
        }
        for (deadline, id) in ids where deadline % 10 != 0 { queue.remove(id) }
        #expect(queue.count == 100)
        var last = Int64.min
        var popped = 0
        while let (deadline, task) = queue.popDue(notAfter: .max) {
            #expect(deadline == task && deadline % 10 == 0 && deadline >= last)
            last = deadline
            popped += 1
        }
        #expect(popped == 100)
    }
}
