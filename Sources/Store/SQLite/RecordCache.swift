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

    /// An entry and the version of the write (or of the read's start) it comes from.
    private var entries: [String: (entry: Entry, version: UInt64)] = [:]
    /// Bumped by every write (``set(_:for:)``, ``forget(_:)``) and every clear.
    private var version: UInt64 = 0
    /// The version of the last clear (the cache full): a read that began before it may not fill, since the
    /// writes it would have to lose to are forgotten with everything else.
    private var clearedAt: UInt64 = 0
    private let lock = NSLock()
    private let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// `.some(record)`, `.some(nil)` when known absent, `nil` when not cached.
    func lookup(_ key: String) -> Record?? {
        lock.lock()
        defer { lock.unlock() }
        switch entries[key]?.entry {
        case .present(let record): return .some(record)
        case .absent: return .some(nil)
        case nil: return nil
        }
    }

    /// What was just written (or deleted: nil), for every later lookup.
    func set(_ record: Record?, for key: String) {
        lock.lock()
        defer { lock.unlock() }
        version += 1
        store(record, for: key, version: version)
    }

    /// Caches `record` unless `key` is known to be present (then the store's insert of it will do nothing).
    func setIfAbsent(_ record: Record, for key: String) {
        lock.lock()
        defer { lock.unlock() }
        if case .present = entries[key]?.entry { return }
        version += 1
        store(record, for: key, version: version)
    }

    /// Drops what is known about `key`: the next lookup reads the database.
    func forget(_ key: String) {
        lock.lock()
        defer { lock.unlock() }
        version += 1
        entries[key] = nil
    }

    /// Forgets everything (many records were rewritten at once): every lookup reads the database again, and
    /// no read that began before this may fill the cache.
    func removeAll() {
        lock.lock()
        defer { lock.unlock() }
        entries.removeAll(keepingCapacity: true)
        version += 1
        clearedAt = version
    }

    /// Take before reading the database, then pass to ``fill(_:for:readSince:)``.
    func readTicket() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return version
    }

    /// Caches what a read found, unless `key` was written since the read began (`ticket`): a read that
    /// found nothing must not hide a device registered meanwhile.
    func fill(_ record: Record?, for key: String, readSince ticket: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        if ticket < clearedAt { return }
        if let current = entries[key], current.version > ticket { return }
        store(record, for: key, version: ticket)
    }

    private func store(_ record: Record?, for key: String, version: UInt64) {
        if entries.count >= capacity && entries[key] == nil {
            entries.removeAll(keepingCapacity: true)
            self.version += 1
            clearedAt = self.version
        }
        entries[key] = (record.map(Entry.present) ?? .absent, version)
    }
}
