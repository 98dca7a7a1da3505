// APNs Sandbox — the queue between callers and the store's writer thread.
import Support
import Foundation
import Glibc
import Sandbox
import Synchronization

/// A notification row ready to insert: the indexed columns plus the encoded record.
struct EncodedRow: Sendable {
    let apnsID: String
    let deviceToken: String
    let topic: String
    let bundleID: String
    let status: NotificationStatus
    let receivedAt: Int64
    let record: [UInt8]
    /// The push type, the extension's outcome ("" when none) and the lower-cased searchable text.
    let pushType: String
    let outcome: String
    let searchText: String

    init(_ record: NotificationRecord) {
        pushType = record.pushType ?? ""
        outcome = record.outcome?.rawValue ?? ""
        searchText = Self.searchText(of: record)
        apnsID = record.apnsID
        deviceToken = record.deviceToken
        topic = record.topic
        bundleID = record.bundleID
        status = record.status
        receivedAt = record.receivedAt
        self.record = NotificationRecordCodec.encode(record)
    }

    /// The displayed title, subtitle and body and the payload, one per line, lowercased: built in one string,
    /// and not copied again when it is lowercase already (a push that is not shown yet: its payload alone).
    static func searchText(of record: NotificationRecord) -> String {
        var text: String
        if let displayed = record.displayed, displayed.title != nil || displayed.subtitle != nil || displayed.body != nil {
            text = ""
            text.reserveCapacity(record.payload.utf8.count + 64)
            func line(_ part: String?) {
                guard let part else { return }
                text += part
                text += "\n"
            }
            line(displayed.title)
            line(displayed.subtitle)
            line(displayed.body)
            text += record.payload
        } else {
            text = record.payload
        }
        let isLowercase = text.utf8.allSatisfy { $0 < 0x80 && !($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
        return isLowercase ? text : text.lowercased()
    }
}

/// Work for the writer thread, in submission order.
enum WriteItem: Sendable {
    /// Rows from one `save` call and the events they announce: committed together (never split
    /// across transactions).
    case save(rows: [EncodedRow], events: [EventDraft], completion: @Sendable (Result<Void, any Error>) -> Void)
    /// Events on their own (rejected pushes, device changes), in the same group commit as saves.
    case events(drafts: [EventDraft], completion: @Sendable (Result<[SandboxEvent], any Error>) -> Void)
    /// A synchronous write that joins the next group-commit transaction (no commit of its own): for
    /// frequent small writes that must not add an fsync each (the webhook outbox).
    case batchedTask(
        body: @Sendable (SQLiteConnection) throws -> any Sendable,
        completion: @Sendable (Result<any Sendable, any Error>) -> Void)
    /// A synchronous write (devices, apps, delete, prune) run in its own transaction.
    case task(
        body: @Sendable (SQLiteConnection) throws -> any Sendable,
        completion: @Sendable (Result<any Sendable, any Error>) -> Void)
}

/// A multi-producer, single-consumer queue whose consumer sleeps on a condition variable.
///
/// The writer takes *everything* queued at once, which is what makes concurrent saves share a
/// commit: while one transaction (and its fsync) runs, the next batch accumulates.
///
/// ### Why `NSCondition` and `@unchecked Sendable`
/// Every producer (one per event loop, plus callers of synchronous writes) takes this lock once per
/// save, so it is contended. `Synchronization.Mutex` on Linux is a priority-inheritance futex: under
/// contention each unlock goes through the kernel and hands the lock over strictly in turn, and a
/// benchmark with 8 producers spent 40 % of its CPU in `Mutex._lockSlow`, halving throughput.
/// `NSCondition` is a plain `pthread_mutex_t` plus `pthread_cond_t`, which lets a running thread
/// take a free lock at once and gives the writer a real condition variable to sleep on. The class is
/// `@unchecked Sendable` because `state` is only read or written between `condition.lock()` and
/// `condition.unlock()` (all in this file); the counters are atomics.
final class WriteQueue: @unchecked Sendable {
    private struct State {
        var items: [WriteItem] = []
        /// An empty array with capacity, swapped in when the writer takes `items`.
        var spare: [WriteItem] = []
        var queuedRecords = 0
        /// Set once the store is open (``open()``): until then items are refused.
        var isOpened = false
        var isClosed = false
        var isWriterWaiting = false
        /// ``wakeWriter()`` was called: the writer's next (or current) wait returns at once.
        var isWakeRequested = false
    }

    private let condition = NSCondition()
    private var state = State()
    /// Saves beyond this many waiting records fail with `overloaded` instead of growing memory forever.
    let maxQueuedRecords: Int
    /// Committed write transactions (save batches and synchronous writes).
    let committedTransactions = Atomic<Int>(0)
    /// Told about every committed event, in id order, on the writer thread (see ``SQLiteStore/observeEvents(_:)``).
    let eventObserver = ObserverSlot<[SandboxEvent]>()
    /// Told the duration in seconds of every committed write transaction, on the writer thread
    /// (see ``SQLiteStore/observeCommits(_:)``).
    let commitObserver = ObserverSlot<Double>()
    /// `pthread_self()` of the writer thread, 0 before it starts.
    let writerThread = Atomic<UInt>(0)

    init(maxQueuedRecords: Int) {
        self.maxQueuedRecords = maxQueuedRecords
    }

    var isOnWriterThread: Bool {
        writerThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    private func locked<Result>(_ body: (inout State) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    /// Appends `item`. Returns the error to report instead when the queue is closed or full.
    func enqueue(_ item: WriteItem, records: Int = 0) -> StoreError? {
        enum Outcome { case queued, notOpen, closed, overloaded(Int) }
        let outcome = locked { state -> Outcome in
            guard !state.isClosed else { return .closed }
            guard state.isOpened else { return .notOpen }
            if records > 0, state.queuedRecords > 0, state.queuedRecords + records > maxQueuedRecords {
                return .overloaded(state.queuedRecords)
            }
            state.items.append(item)
            state.queuedRecords += records
            if state.isWriterWaiting {
                state.isWriterWaiting = false
                condition.signal()
            }
            return .queued
        }
        switch outcome {
        case .queued: return nil
        case .notOpen: return .notOpen()
        case .closed: return .closed()
        case .overloaded(let queued): return .overloaded(queued: queued)
        }
    }

    /// Accepts items from now on (the writer thread runs), until ``close()``.
    func open() {
        locked { $0.isOpened = true }
    }

    /// Whether ``open()`` was called.
    var isOpened: Bool { locked { $0.isOpened } }

    /// Refuses new items from now on; the writer drains what is queued and then stops.
    func close() {
        locked { state in
            state.isClosed = true
            condition.signal()
        }
    }

    var isClosed: Bool { locked { $0.isClosed } }

    /// Makes the writer's wait in ``takeAll(recycling:waitingAtMost:)`` return (empty) at once, so
    /// that it looks at the store's health again (a reader found that writes may fail: probe soon).
    func wakeWriter() {
        locked { state in
            state.isWakeRequested = true
            if state.isWriterWaiting {
                state.isWriterWaiting = false
                condition.signal()
            }
        }
    }

    /// Writer thread only: blocks until there is work, then returns all of it; nil once closed and empty.
    /// - Parameters:
    ///   - recycled: The previous batch, emptied; its capacity is reused for the next one so
    ///     producers rarely grow the array while holding the lock. Left empty.
    ///   - timeout: When given, returns an empty array after this many seconds without work. An empty
    ///     array also comes back at once after ``wakeWriter()``.
    func takeAll(recycling recycled: inout [WriteItem], waitingAtMost timeout: Double? = nil) -> [WriteItem]? {
        condition.lock()
        defer { condition.unlock() }
        if recycled.capacity > state.spare.capacity {
            swap(&recycled, &state.spare)
        }
        recycled = []
        let deadline = timeout.map { Date(timeIntervalSinceNow: max(0, $0)) }
        while state.items.isEmpty {
            if state.isClosed { return nil }
            if state.isWakeRequested {
                state.isWakeRequested = false
                return []
            }
            state.isWriterWaiting = true
            if let deadline {
                if !condition.wait(until: deadline), state.items.isEmpty {
                    state.isWriterWaiting = false
                    return []
                }
            } else {
                condition.wait()
            }
        }
        state.isWriterWaiting = false
        state.isWakeRequested = false
        var items = state.spare
        state.spare = []
        swap(&items, &state.items)
        state.queuedRecords = 0
        return items
    }
}
