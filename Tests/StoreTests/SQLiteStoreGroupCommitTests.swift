// APNs Sandbox — group commit: many concurrent saves share few transactions.
import Dispatch
import Foundation
import Sandbox
import Store
import Synchronization
import Testing
import Support

@Suite struct SQLiteStoreGroupCommitTests {
    /// 1000 single-record saves from 8 threads all succeed, all rows land, in far fewer than 1000 commits.
    @Test func concurrentSavesShareCommits() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("group.sqlite"))
        let before = store.committedTransactions
        let threads = 8
        let perThread = 125
        let group = DispatchGroup()
        let failures = Locked<[String]>([])
        for thread in 0..<threads {
            group.enter()
            Thread {
                for index in 0..<perThread {
                    group.enter()
                    store.save([sampleRecord(apnsID: "t\(thread)-\(index)")]) { result in
                        if case .failure(let error) = result {
                            failures.withLock { $0.append("\(error)") }
                        }
                        group.leave()
                    }
                }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try store.count(matching: NotificationFilter()) == threads * perThread)
        let transactions = store.committedTransactions - before
        #expect(transactions >= 1)
        #expect(transactions < 200, "1000 saves took \(transactions) transactions")
        store.close()
    }

    /// One save call larger than the batch limit still commits, atomically and alone.
    @Test func oversizedSaveCommitsWhole() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("big.sqlite"), synchronous: .normal)
        let records = (0..<(SQLiteStore.maxBatchRecords + 10)).map { sampleRecord(apnsID: "big\($0)") }
        try await store.save(records)
        #expect(try store.count(matching: NotificationFilter()) == records.count)
    }
}
