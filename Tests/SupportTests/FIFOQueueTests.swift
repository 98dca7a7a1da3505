// APNs Sandbox — the FIFO queue behind waiters and ready deliveries.
import Support
import Testing

@Suite struct FIFOQueueTests {
    /// Elements come out in order across compactions; removeAll empties it.
    @Test func ordersAcrossCompaction() {
        var queue = FIFOQueue<Int>()
        var next = 0
        var expected = 0
        for round in 0..<50 {
            for _ in 0..<(100 + round) {
                queue.append(next)
                next += 1
            }
            for _ in 0..<90 {
                #expect(queue.popFirst() == expected)
                expected += 1
            }
        }
        #expect(queue.count == next - expected)
        queue.append(contentsOf: [next, next + 1])
        let rest = queue.removeAll()
        #expect(rest == Array(expected...(next + 1)))
        #expect(queue.isEmpty && queue.popFirst() == nil)
    }
}
