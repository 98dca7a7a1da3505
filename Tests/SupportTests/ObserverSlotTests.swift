// APNs Sandbox — an observer costs the same on every call (no thunk chain growing with each read).
import Foundation
import Support
import Synchronization
import Testing

@Suite struct ObserverSlotTests {
    /// The callback's own stack depth is the same on the 2,000th call as on the first. (A closure read out of a
    /// `Locked<(@Sendable (T) -> Void)?>` gains a reabstraction thunk per read: its depth grows by one frame or
    /// more per call, so this fails for that shape.)
    @Test func callingDoesNotDeepenTheCallback() {
        let slot = ObserverSlot<Int>()
        let depths = Locked<[Int]>([])
        slot.set { _ in
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
        }
        for index in 0..<2000 {
            slot(index)
        }
        let recorded = depths.withLock { $0 }
        #expect(recorded.count == 2000)
        #expect(recorded.first == recorded.last, "depth \(recorded.first ?? 0) → \(recorded.last ?? 0)")
    }

    /// Replaced and removed: later calls go to the new callback, then to none.
    @Test func replacesAndRemoves() {
        let slot = ObserverSlot<String>()
        let seen = Locked<[String]>([])
        slot("before")
        slot.set { value in seen.withLock { $0.append("first " + value) } }
        slot("a")
        slot.set { value in seen.withLock { $0.append("second " + value) } }
        slot("b")
        #expect(slot.isSet)
        slot.set(nil)
        slot("after")
        #expect(!slot.isSet)
        #expect(seen.withLock { $0 } == ["first a", "second b"])
    }
}
