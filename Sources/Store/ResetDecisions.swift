// APNs Sandbox — a reset's decisions about stored devices or apps, the same for every store.
import Sandbox

/// How ``StoreReset/device`` / ``StoreReset/app`` and the records to add become writes, whichever store holds them.
enum ResetDecisions {
    /// Asks `decide` about each of `stored` (nil: all are kept) and saves or deletes as it says (a replacement keeps
    /// the stored key), then adds each of `toAdd` unless a record with its key is there by then.
    /// - Returns: Every row that changed, before and after (nil: absent), in the order first touched.
    static func apply<Record: Equatable>(
        stored: [Record], decide: ((Record) -> StoreReset.Change<Record>)?, toAdd: [Record],
        key: (Record) -> String, rekeyed: (Record, String) -> Record,
        isStored: (String) throws -> Bool, save: (Record) throws -> Void, delete: (String) throws -> Void
    ) rethrows -> [(before: Record?, after: Record?)] {
        var changes: [String: (before: Record?, after: Record?)] = [:]
        var order: [String] = []
        func note(_ key: String, before: Record?, after: Record?) {
            if changes[key] == nil {
                order.append(key)
                changes[key] = (before, after)
            } else {
                changes[key]?.after = after
            }
        }
        if let decide {
            for record in stored {
                let recordKey = key(record)
                switch decide(record) {
                case .keep:
                    continue
                case .save(let replacement):
                    let replacement = rekeyed(replacement, recordKey)
                    try save(replacement)
                    note(recordKey, before: record, after: replacement)
                case .delete:
                    try delete(recordKey)
                    note(recordKey, before: record, after: nil)
                }
            }
        }
        for record in toAdd {
            let recordKey = key(record)
            if let change = changes[recordKey] {
                guard change.after == nil else { continue }
            } else if try isStored(recordKey) {
                continue
            }
            try save(record)
            note(recordKey, before: nil, after: record)
        }
        return order.compactMap { changes[$0] }.filter { $0.before != $0.after }
    }

    static func rekeyed(_ device: DeviceRecord, _ token: String) -> DeviceRecord {
        var device = device
        device.token = token
        return device
    }

    static func rekeyed(_ app: AppRecord, _ bundleID: String) -> AppRecord {
        var app = app
        app.bundleID = bundleID
        return app
    }
}
