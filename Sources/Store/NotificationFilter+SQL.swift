// APNs Sandbox — a NotificationFilter as an SQL WHERE clause with bound parameters.
import Sandbox

/// A `WHERE` clause and the values for its `?` placeholders, in order.
struct SQLCondition: Sendable {
    enum Value: Sendable {
        case text(String)
        case integer(Int64)
    }

    var sql: String
    var values: [Value]

    /// The clause for `filter` (empty when the filter matches everything).
    init(_ filter: NotificationFilter) {
        var terms: [String] = []
        var values: [Value] = []
        if let token = filter.deviceToken {
            terms.append("device_token = ?")
            values.append(.text(token))
        }
        if let topic = filter.topic {
            terms.append("topic = ?")
            values.append(.text(topic))
        }
        if let bundleID = filter.bundleID {
            terms.append("bundle_id = ?")
            values.append(.text(bundleID))
        }
        if let status = filter.status {
            terms.append("status = ?")
            values.append(.text(status.rawValue))
        }
        if let since = filter.since {
            terms.append("received_at >= ?")
            values.append(.integer(since))
        }
        if let after = filter.after {
            terms.append("seq > ?")
            values.append(.integer(after))
        }
        self.sql = terms.isEmpty ? "" : " WHERE " + terms.joined(separator: " AND ")
        self.values = values
    }

    /// `status IN (?, …)` for the given statuses.
    init(statusIn statuses: [NotificationStatus]) {
        sql = " WHERE status IN (" + Array(repeating: "?", count: statuses.count).joined(separator: ", ") + ")"
        values = statuses.map { .text($0.rawValue) }
    }

    /// Binds the values to parameters 1…n. Returns the next free parameter index.
    @discardableResult
    func bind(to statement: SQLiteConnection.Statement) throws -> Int32 {
        var index: Int32 = 1
        for value in values {
            switch value {
            case .text(let text): try statement.bind(text, at: index)
            case .integer(let integer): try statement.bind(integer, at: index)
            }
            index += 1
        }
        return index
    }
}
