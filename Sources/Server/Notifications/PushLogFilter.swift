// APNs Sandbox — the filters of `GET /api/v1/pushes`, matched over the bounded in-memory push log.
import APNsProtocol
import Sandbox

/// `device` (token prefix, case-insensitive), `topic`, `pushType` (comma list), `status` (`accepted`,
/// `rejected` or HTTP status numbers, comma list), `reason` (APNs reason names, comma list), `since`
/// (received at or after, ms), `until` (received strictly before, ms) and `q` (apns-id or token prefix,
/// or text in the topic; case-insensitive).
struct PushLogFilter: Sendable {
    enum Status: Sendable, Equatable {
        case accepted, rejected, http(Int)
    }

    var device: String?
    var topic: String?
    var pushTypes: [String] = []
    var statuses: [Status] = []
    var reasons: [String] = []
    var since: Int64?
    var until: Int64?
    var search: String?

    var isEmpty: Bool {
        device == nil && topic == nil && pushTypes.isEmpty && statuses.isEmpty && reasons.isEmpty
            && since == nil && until == nil && search == nil
    }

    init() {}

    init(_ query: QueryParameters) throws {
        device = query["device"]?.lowercased()
        topic = query["topic"]
        pushTypes = try query.list("pushType").map { value in
            guard PushType(rawValue: value) != nil else {
                throw Self.invalid("pushType", "must be one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }
        statuses = try query.list("status").map { value in
            switch value {
            case "accepted": return .accepted
            case "rejected": return .rejected
            default:
                guard let code = Int(value), (100...599).contains(code) else {
                    throw Self.invalid("status", "must be accepted, rejected or an HTTP status (100…599)")
                }
                return .http(code)
            }
        }
        reasons = try query.list("reason").map { value in
            guard APNsReason(rawValue: value) != nil else {
                throw Self.invalid("reason", "must be an APNs reason name (BadDeviceToken, TopicDisallowed, …)")
            }
            return value
        }
        since = try Self.milliseconds(query, "since")
        until = try Self.milliseconds(query, "until")
        search = query["q"]?.lowercased()
    }

    static func milliseconds(_ query: QueryParameters, _ name: String) throws -> Int64? {
        guard let text = query[name] else { return nil }
        guard let value = Int64(text), value >= 0 else { throw invalid(name, "must be milliseconds since the epoch") }
        return value
    }

    static func invalid(_ name: String, _ message: String) -> APIError {
        APIError(status: 400, code: "invalid_parameter", message: "\(name) \(message)")
    }

    /// The status the listing shows for `record` (0: dropped by a fault).
    static func status(of record: PushLogEntry) -> Int {
        record.rejection?.status ?? (record.fault?.dropsPush == true ? 0 : 200)
    }

    func matches(_ record: PushLogEntry) -> Bool {
        if let device, !record.deviceToken.lowercased().hasPrefix(device) { return false }
        if let topic, record.topic != topic { return false }
        if !pushTypes.isEmpty, !pushTypes.contains(record.pushType?.rawValue ?? "") { return false }
        if !statuses.isEmpty, !statuses.contains(where: { matches($0, record) }) { return false }
        if !reasons.isEmpty, !reasons.contains(record.rejection?.reason.rawValue ?? "") { return false }
        if let since, record.receivedAt < since { return false }
        if let until, record.receivedAt >= until { return false }
        if let search {
            let found = record.apnsID.lowercased().hasPrefix(search) || record.deviceToken.lowercased().hasPrefix(search)
                || (record.topic?.lowercased().contains(search) ?? false)
            if !found { return false }
        }
        return true
    }

    private func matches(_ status: Status, _ record: PushLogEntry) -> Bool {
        switch status {
        case .accepted: record.isAccepted
        case .rejected: !record.isAccepted
        case .http(let code): Self.status(of: record) == code
        }
    }
}
