// APNs Sandbox — what a device slot its shard keeps idle still holds.
@testable import Sandbox
import Testing

@Suite struct IdleSlotMemoryTests {
    /// A kept idle slot holds no room for pushes it no longer has (the queue's table is given back with its last
    /// entry), and an entry keeps its extension fields out of line (inline they made it 1.6 KB).
    @Test func aKeptIdleSlotHoldsNoRoomForPushes() {
        let harness = DeliveryHarness()
        for _ in 0..<3 {
            let push = harness.push()
            #expect(harness.status(push.apnsID) == .displayed)
        }
        let slot = harness.engine.slot(for: DeliveryHarness.token)
        #expect(slot.state.withLock { $0.queue.entries.isEmpty && $0.queue.entries.capacity == 0 })
        #expect(MemoryLayout<DeviceQueue.Entry>.size < 700)
    }
}
