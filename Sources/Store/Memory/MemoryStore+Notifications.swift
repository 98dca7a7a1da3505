// APNs Sandbox — MemoryStore as the NotificationRepository and the EventLogRepository.
import Sandbox

extension MemoryStore: NotificationRepository {
    public func save(_ records: [NotificationRecord], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        save(records, events: [], completion: completion)
    }

    /// Keeps `records` (replacing those with the same apns-id on the same device) and logs `events`, at once
    /// and together; `completion` runs on the store's queue, then the event observer.
    public func save(
        _ records: [NotificationRecord], events: [EventDraft],
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        guard !records.isEmpty || !events.isEmpty else { return completion(.success(())) }
        let capacity = capacity
        let events = events.map(Self.compacted)
        let outcome: Result<(drain: Bool, dropped: NotificationJournal.Dropped), any Error> = Result {
            try withOpenState { state in
                for record in records {
                    state.notifications.upsert(record)
                }
                let dropped = state.notifications.drop(toKeep: capacity.notifications)
                let logged = state.events.append(events, capacity: capacity.events)
                return (enqueueCallback(in: &state, events: logged) { completion(.success(())) }, dropped)
            }
        }
        switch outcome {
        case .success(let result):
            // The dropped records are freed here, after the lock. Only those that may have files are announced
            // (announcing every drop cost 15 % of the CPU of a load test: a look at the disk per push).
            announceDropped(result.dropped.withFiles)
            scheduleDrain(result.drain)
        case .failure(let error):
            completion(.failure(error))
        }
    }

    public func notification(apnsID: String, deviceToken: String?) throws -> NotificationRecord? {
        if let deviceToken {
            return try withOpenState { $0.notifications.record(for: NotificationKey(apnsID: apnsID, deviceToken: deviceToken)) }
        }
        return try withOpenState { state in
            return state.notifications.newestFirst(limit: 1, offset: 0) { record, _ in record.apnsID == apnsID }
        }.page.first
    }

    /// Whether a notification with this apns-id exists on `deviceToken` (on any device when nil).
    public func containsNotification(apnsID: String, deviceToken: String?) throws -> Bool {
        try notification(apnsID: apnsID, deviceToken: deviceToken) != nil
    }

    public func notifications(matching filter: NotificationFilter, limit: Int, offset: Int) throws -> [NotificationRecord] {
        // A listing that must be sorted is sorted here, after the lock the pushes' saves need.
        try withOpenState { state in
            state.notifications.newestFirst(limit: limit, offset: offset, where: filter.matches)
        }.page
    }

    public func count(matching filter: NotificationFilter) throws -> Int {
        try withOpenState { state in
            if let statuses = filter.statusesOnly {
                guard let statuses else { return state.notifications.count }
                return Set(statuses).reduce(0) { $0 + state.notifications.statusCounts[$1, default: 0] }
            }
            var count = 0
            state.notifications.forEachNewestFirst { record, seq in
                if filter.matches(record, seq: seq) { count += 1 }
                return true
            }
            return count
        }
    }

    public func latestCursor() throws -> Int64 {
        try withOpenState { $0.notifications.lastSeq }
    }

    /// Records whose status is not final, oldest first. Always empty after a start (nothing survives one);
    /// the delivery engine asks at its recovery.
    public func unfinished() throws -> [NotificationRecord] {
        try withOpenState { state in
            state.notifications.newestFirst(limit: .max, offset: 0) { record, _ in !record.status.isFinal }
        }.page.reversed()
    }

    @discardableResult
    public func deleteNotifications(matching filter: NotificationFilter) throws -> [NotificationKey] {
        try writeJournal { state in state.notifications.remove(where: filter.matches) }
    }

    /// Deletes final records received before `cutoff` (wall-clock ms), then the oldest final ones beyond
    /// the newest `maxRecords` (negative: no cap), as ``SQLiteStore/prune(maxRecords:olderThan:)``; the
    /// journal's own bound drops records of any status as they come.
    @discardableResult
    public func prune(maxRecords: Int, olderThan cutoff: Int64) throws -> Int {
        let result = try prune(keepingAtMost: maxRecords, receivedBefore: cutoff)
        return result.expired + result.overflow
    }

    /// ``prune(maxRecords:olderThan:)`` with the two counts apart (the shape of ``SQLiteStore``'s), telling
    /// `removed` which records went.
    public func prune(
        keepingAtMost maxRecords: Int, receivedBefore cutoff: Int64,
        removed: ([NotificationKey]) -> Void = { _ in }
    ) throws -> (expired: Int, overflow: Int) {
        let (expired, overflow) = try writeJournal { state in
            let expired = state.notifications.remove { record, _ in record.status.isFinal && record.receivedAt < cutoff }
            guard maxRecords >= 0 else { return (expired, [NotificationKey]()) }
            // The newest `maxRecords` final ones by receipt (then seq), as the SQLite store orders them.
            let keep = Set(state.notifications.newestFirst(limit: maxRecords, offset: 0) { record, _ in record.status.isFinal }
                .page.map { NotificationKey(apnsID: $0.apnsID, deviceToken: $0.deviceToken) })
            let overflow = state.notifications.remove { record, _ in
                record.status.isFinal && !keep.contains(NotificationKey(apnsID: record.apnsID, deviceToken: record.deviceToken))
            }
            return (expired, overflow)
        }
        if !expired.isEmpty { removed(expired) }
        if !overflow.isEmpty { removed(overflow) }
        return (expired.count, overflow.count)
    }
}

extension MemoryStore: EventLogRepository {
    public func appendEvents(
        _ drafts: [EventDraft], completion: @escaping @Sendable (Result<[SandboxEvent], any Error>) -> Void
    ) {
        guard !drafts.isEmpty else { return completion(.success([])) }
        let capacity = capacity.events
        let drafts = drafts.map(Self.compacted)
        let outcome = Result {
            try withOpenState { state in
                let logged = state.events.append(drafts, capacity: capacity)
                return enqueueCallback(in: &state, events: logged) { completion(.success(logged)) }
            }
        }
        switch outcome {
        case .success(let drain): scheduleDrain(drain)
        case .failure(let error): completion(.failure(error))
        }
    }

    public func events(after id: Int64, matching filter: EventFilter, limit: Int) throws -> [SandboxEvent] {
        try withOpenState { $0.events.events(after: id, limit: limit, where: filter.matches) }
    }

    public func latestEventID() throws -> Int64 {
        try withOpenState { $0.events.lastID }
    }

    public func oldestEventID() throws -> Int64? {
        try withOpenState { $0.events.oldestID }
    }

    @discardableResult
    public func pruneEvents(maxEvents: Int, olderThan cutoff: Int64) throws -> Int {
        try pruneEvents(maxEvents: maxEvents, olderThan: cutoff, keepingAbove: .max)
    }

    /// As ``SQLiteStore/pruneEvents(maxEvents:olderThan:keepingAbove:)``: never an event above `floor`.
    @discardableResult
    public func pruneEvents(maxEvents: Int, olderThan cutoff: Int64, keepingAbove floor: Int64) throws -> Int {
        try writeJournal { state in
            let latest = state.events.lastID
            let expired = state.events.remove { $0.time < cutoff && $0.id <= floor }
            guard maxEvents >= 0 else { return expired }
            let limit = min(latest - Int64(maxEvents), floor)
            return expired + state.events.remove { $0.id <= limit }
        }
    }
}

extension MemoryStore {
    /// `draft` with its JSON in a buffer of its own size, made before the store's lock is taken: the journal keeps
    /// an event a while, and its JSON was written into room reserved for any event of its type (512 bytes and more,
    /// 1 KB once grown): 50,000 kept events held about 20 MB of that room.
    static func compacted(_ draft: EventDraft) -> EventDraft {
        guard draft.data.capacity > draft.data.count + 64 else { return draft }
        var draft = draft
        draft.data = [UInt8](unsafeUninitializedCapacity: draft.data.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: draft.data)
        }
        return draft
    }
}
