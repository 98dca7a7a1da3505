// APNs Sandbox — apns-ids made on many threads at once (XCTest, so both test runners report).
import Support
import Synchronization
import XCTest

final class UUIDGeneratorConcurrencyTests: XCTestCase {
    /// Threads with their own generators never produce the same id.
    func testIDsFromManyThreadsAreUnique() {
        let collected = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var local: [String] = []
            for _ in 0..<5_000 { local.append(UUIDGenerator.make()) }
            collected.withLock { $0.append(contentsOf: local) }
        }
        let all = collected.withLock { $0 }
        XCTAssertEqual(all.count, 40_000)
        XCTAssertEqual(Set(all).count, 40_000)
        XCTAssertTrue(all.allSatisfy(UUIDGenerator.isCanonical))
    }
}
