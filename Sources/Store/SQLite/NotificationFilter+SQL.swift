// APNs Sandbox — a NotificationFilter as an SQL WHERE clause with bound parameters.
import Foundation
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
        /// `column IN (?, …)` for a list that is not empty.
        func oneOf(_ column: String, _ texts: [String]?) {
            guard let texts, !texts.isEmpty else { return }
            terms.append("\(column) IN (" + Array(repeating: "?", count: texts.count).joined(separator: ", ") + ")")
            values += texts.map { .text($0) }
        }
        oneOf("status", filter.statuses?.map(\.rawValue))
        if let until = filter.until {
            terms.append("received_at < ?")
            values.append(.integer(until))
        }
        if let search = filter.search {
            let escaped = Self.escapeLike(search)
            terms.append("(apns_id LIKE ? ESCAPE '\\' OR device_token LIKE ? ESCAPE '\\' OR topic LIKE ? ESCAPE '\\'"
                + " OR bundle_id LIKE ? ESCAPE '\\' OR instr(search_text, ?) > 0)")
            values += [.text(escaped + "%"), .text(escaped.lowercased() + "%"), .text("%" + escaped + "%"),
                       .text("%" + escaped + "%"), .text(search.lowercased())]
        }
        oneOf("push_type", filter.pushTypes)
        oneOf("outcome", filter.outcomes?.map(\.rawValue))
        if let after = filter.after {
            terms.append("seq > ?")
            values.append(.integer(after))
        }
        self.sql = terms.isEmpty ? "" : " WHERE " + terms.joined(separator: " AND ")
        self.values = values
    }

    /// `text` with LIKE's wildcards (and the escape character) escaped by a backslash.
    static func escapeLike(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
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
