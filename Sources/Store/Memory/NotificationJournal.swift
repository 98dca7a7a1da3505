// APNs Sandbox — the memory store's notification records: a bounded journal in insertion order.
import Foundation
import Sandbox

/// Notification records in the order they were first saved (each with its `seq`, the cursor of
/// ``NotificationRepository/latestCursor()``), found by (apns-id, device) in O(1), the oldest dropped first.
struct NotificationJournal: Sendable {
    struct Slot: Sendable {
        let seq: Int64
        /// Nil once deleted, dropped or replaced by a newer push with the same apns-id (a hole).
        var record: NotificationRecord?
        /// Whether a push this one replaced (same apns-id and device, so the same attachment folder) may have
        /// left files there.
        var inheritsFiles = false
    }

    /// In seq order; holes are compacted away once they outnumber the records.
    private var slots: [Slot] = []
    /// The place of `slots[0]`: places only grow, so cutting the dropped slots off the front changes no place.
    private var base = 0
    /// `slots[..<head]` are all holes.
    private var head = 0
    private var holes = 0
    private(set) var lastSeq: Int64 = 0
    /// Each record's place (`base` + its index in `slots`).
    private var placeByKey: [NotificationKey: Int] = [:]
    private(set) var statusCounts: [NotificationStatus: Int] = [:]
    /// Whether seq order is also `receivedAt` order (then newest-first listings need no sort).
    private(set) var isInReceiptOrder = true
    private var newestReceivedAt = Int64.min
    /// Records dropped to keep the bound.
    var dropped = 0

    var count: Int { placeByKey.count }
    /// Slots held, holes included (bounded by about twice ``count`` plus 4096).
    var slotCount: Int { slots.count }

    /// Adds `record`, or stores the new state of the push with its key (same topic, app and receipt time) in
    /// its place. A new push that reuses an earlier one's apns-id on the same device replaces it as new (a new
    /// seq: the `after=` cursor sees it), as ``StoreWriter/removeReplacedSQL`` does.
    mutating func upsert(_ record: NotificationRecord) {
        let key = NotificationKey(apnsID: record.apnsID, deviceToken: record.deviceToken)
        var inheritsFiles = false
        if let place = placeByKey[key], slots[place - base].record != nil {
            // Compared where it is: a copy of the old record would retain (and then release) each of its strings.
            let index = place - base
            if slots[index].record?.topic == record.topic, slots[index].record?.bundleID == record.bundleID,
                slots[index].record?.receivedAt == record.receivedAt, let old = slots[index].record?.status
            {
                statusCounts[old, default: 0] -= 1
                statusCounts[record.status, default: 0] += 1
                slots[index].record = record
                return
            }
            inheritsFiles = slots[index].inheritsFiles || slots[index].record.map(Self.mayHaveFiles) == true
            if let old = slots[index].record.take() { forget(old) }
        }
        lastSeq += 1
        placeByKey[key] = base + slots.count
        slots.append(Slot(seq: lastSeq, record: record, inheritsFiles: inheritsFiles))
        statusCounts[record.status, default: 0] += 1
        if record.receivedAt < newestReceivedAt { isInReceiptOrder = false }
        newestReceivedAt = max(newestReceivedAt, record.receivedAt)
        compactIfSparse()
    }

    /// What ``drop(toKeep:)`` took out.
    struct Dropped {
        /// To be freed by the caller, after its lock.
        var records: [NotificationRecord] = []
        /// The keys whose attachment folder may hold files (``mayHaveFiles(_:)``, or a replaced push's).
        var withFiles: [NotificationKey] = []
    }

    /// Drops the oldest records until at most `capacity` remain.
    mutating func drop(toKeep capacity: Int) -> Dropped {
        guard count > capacity else { return Dropped() }
        var removed = Dropped()
        while count > capacity, head < slots.count {
            // Moved out, not copied.
            if let record = slots[head].record.take() {
                let key = forget(record)
                if slots[head].inheritsFiles || Self.mayHaveFiles(record) { removed.withFiles.append(key) }
                removed.records.append(record)
            }
            head += 1
        }
        dropped += removed.records.count
        compactIfSparse()
        return removed
    }

    /// False for a push shown without an extension and without attachments (nearly every push of a load test):
    /// nothing wrote files for it, so its drop need not look at the disk. True for everything else, also a push
    /// still on its way.
    static func mayHaveFiles(_ record: NotificationRecord) -> Bool {
        record.outcome != .direct || record.displayed?.attachments.isEmpty == false
    }

    /// Removes every record `isRemoved` selects; returns their keys.
    mutating func remove(where isRemoved: (NotificationRecord, Int64) -> Bool) -> [NotificationKey] {
        var keys: [NotificationKey] = []
        for place in head..<slots.count {
            guard let record = slots[place].record, isRemoved(record, slots[place].seq) else { continue }
            keys.append(remove(at: place, record))
        }
        compactIfSparse()
        if placeByKey.isEmpty {
            isInReceiptOrder = true
            newestReceivedAt = .min
        }
        return keys
    }

    private mutating func remove(at index: Int, _ record: NotificationRecord) -> NotificationKey {
        slots[index].record = nil
        return forget(record)
    }

    /// The bookkeeping of a record whose slot became a hole.
    @discardableResult
    private mutating func forget(_ record: NotificationRecord) -> NotificationKey {
        let key = NotificationKey(apnsID: record.apnsID, deviceToken: record.deviceToken)
        placeByKey[key] = nil
        statusCounts[record.status, default: 0] -= 1
        holes += 1
        return key
    }

    /// Removes the holes once there are more of them than records (and more than 4096): amortised O(1).
    private mutating func compactIfSparse() {
        while head < slots.count, slots[head].record == nil { head += 1 }
        // The holes in front (the dropped records: nearly every hole of a load test) are cut off alone, once
        // there are more of them than slots behind them; no place changes.
        if head > 4096, head >= slots.count - head {
            slots.removeFirst(head)
            base += head
            holes -= head
            head = 0
        }
        guard holes > 4096, holes > placeByKey.count else { return }
        slots = slots[head...].filter { $0.record != nil }
        base = 0
        head = 0
        holes = 0
        placeByKey.removeAll(keepingCapacity: true)
        for (place, slot) in slots.enumerated() {
            if let record = slot.record {
                placeByKey[NotificationKey(apnsID: record.apnsID, deviceToken: record.deviceToken)] = place
            }
        }
    }

    func record(for key: NotificationKey) -> NotificationRecord? {
        placeByKey[key].flatMap { slots[$0 - base].record }
    }

    /// Calls `body` with each record and its seq, newest (greatest seq) first, until it returns false.
    func forEachNewestFirst(_ body: (NotificationRecord, Int64) -> Bool) {
        var place = slots.count - 1
        while place >= head {
            if let record = slots[place].record, !body(record, slots[place].seq) { return }
            place -= 1
        }
    }

    /// What a newest-first listing needs: in receipt order, the page itself (the scan stops at its end); else
    /// every match, to be sorted by ``Listing/page`` after the caller's lock.
    enum Listing {
        case page([NotificationRecord])
        case unsorted([(record: NotificationRecord, seq: Int64)], limit: Int, offset: Int)

        /// The records newest first — `receivedAt` descending, then seq descending, the order of
        /// ``SQLiteStore`` — skipping `offset`, at most `limit`.
        var page: [NotificationRecord] {
            switch self {
            case .page(let records):
                return records
            case .unsorted(var matches, let limit, let offset):
                matches.sort {
                    $0.record.receivedAt != $1.record.receivedAt ? $0.record.receivedAt > $1.record.receivedAt : $0.seq > $1.seq
                }
                guard offset < matches.count else { return [] }
                let end = limit >= matches.count - offset ? matches.count : offset + limit
                return matches[offset..<end].map(\.record)
            }
        }
    }

    /// Records matching `isIncluded` for a newest-first page (``Listing``), skipping `offset`, at most `limit`.
    func newestFirst(limit: Int, offset: Int, where isIncluded: (NotificationRecord, Int64) -> Bool) -> Listing {
        guard limit > 0 else { return .page([]) }
        let offset = max(offset, 0)
        if isInReceiptOrder {
            var page: [NotificationRecord] = []
            var skipped = 0
            forEachNewestFirst { record, seq in
                guard isIncluded(record, seq) else { return true }
                if skipped < offset {
                    skipped += 1
                } else {
                    page.append(record)
                }
                return page.count < limit
            }
            return .page(page)
        }
        var matches: [(record: NotificationRecord, seq: Int64)] = []
        forEachNewestFirst { record, seq in
            if isIncluded(record, seq) { matches.append((record, seq)) }
            return true
        }
        return .unsorted(matches, limit: limit, offset: offset)
    }

    mutating func removeAll() -> [NotificationKey] {
        remove { _, _ in true }
    }
}

extension NotificationFilter {
    /// Whether `record` (saved with `seq`) matches, as ``SQLCondition``'s `WHERE` clause decides for a row.
    func matches(_ record: NotificationRecord, seq: Int64) -> Bool {
        if let deviceToken, record.deviceToken != deviceToken { return false }
        if let topic, record.topic != topic { return false }
        if let bundleID, record.bundleID != bundleID { return false }
        if let status, record.status != status { return false }
        if let since, record.receivedAt < since { return false }
        if let statuses, !statuses.isEmpty, !statuses.contains(record.status) { return false }
        if let until, record.receivedAt >= until { return false }
        if let pushTypes, !pushTypes.isEmpty, !pushTypes.contains(record.pushType ?? "") { return false }
        if let outcomes, !outcomes.isEmpty, !outcomes.contains(where: { $0 == record.outcome }) { return false }
        if let after, seq <= after { return false }
        // An empty search matches everything, as SQL's `LIKE '%'` does.
        if let search, !search.isEmpty, !Self.record(record, contains: search) { return false }
        return true
    }

    /// The free-text search of ``search``: an apns-id or device-token prefix, or text in the topic, the
    /// bundle id, the displayed title, subtitle or body, or the payload (case-insensitive).
    private static func record(_ record: NotificationRecord, contains search: String) -> Bool {
        let options: String.CompareOptions = [.caseInsensitive]
        if record.apnsID.range(of: search, options: options.union(.anchored)) != nil { return true }
        if record.deviceToken.range(of: search, options: options.union(.anchored)) != nil { return true }
        if record.topic.range(of: search, options: options) != nil { return true }
        if record.bundleID.range(of: search, options: options) != nil { return true }
        let displayed = [record.displayed?.title, record.displayed?.subtitle, record.displayed?.body]
        for text in displayed.compactMap({ $0 }) + [record.payload] where text.range(of: search, options: options) != nil {
            return true
        }
        return false
    }

    /// Whether the filter selects by status alone (or selects everything): a count the journal keeps.
    var statusesOnly: [NotificationStatus]?? {
        guard deviceToken == nil, topic == nil, bundleID == nil, since == nil, after == nil, until == nil,
            search == nil, pushTypes?.isEmpty ?? true, outcomes?.isEmpty ?? true
        else { return nil }
        let statuses = statuses?.isEmpty == false ? statuses : nil
        switch (status, statuses) {
        case (nil, nil): return .some(nil)
        case (let status?, nil): return .some([status])
        case (nil, let statuses?): return .some(statuses)
        case (.some, .some): return nil
        }
    }
}
