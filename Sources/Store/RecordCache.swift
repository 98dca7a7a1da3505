// APNs Sandbox — an in-memory copy of small, hot, rarely written records.
import Foundation

/// Records by key, including "known to be absent", bounded (cleared when it grows past
/// `capacity`, then refilled from the database on demand).
///
/// Safety of `@unchecked Sendable`: the dictionary is only touched under `lock` (an `NSLock`, a
/// plain pthread mutex: the critical sections are a dictionary lookup or store, and under
/// contention from the delivery workers it parks threads instead of spinning).
final class RecordCache<Record: Sendable>: @unchecked Sendable {
    private enum Entry {
        case present(Record)
        case absent
    }

    private var entries: [String: Entry] = [:]
    private let lock = NSLock()
    private let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// `.some(record)`, `.some(nil)` when known absent, `nil` when not cached.
    func lookup(_ key: String) -> Record?? {
        lock.lock()
        defer { lock.unlock() }
        switch entries[key] {
        case .present(let record): return .some(record)
        case .absent: return .some(nil)
        case nil: return nil
        }
    }

    func set(_ record: Record?, for key: String) {
        lock.lock()
        defer { lock.unlock() }
        if entries.count >= capacity && entries[key] == nil { entries.removeAll(keepingCapacity: true) }
        entries[key] = record.map(Entry.present) ?? .absent
    }
}
