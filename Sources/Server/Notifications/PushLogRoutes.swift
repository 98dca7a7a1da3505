// APNs Sandbox — the in-memory push log: `GET /api/v1/pushes`.
import HTTP
import Sandbox

/// `GET /api/v1/pushes?limit=N&…filters`: the newest push records (accepted and rejected), newest first,
/// from the bounded in-memory log (``RecentPushes``, 10 000 records by default); filters: ``PushLogFilter``.
enum PushLogRoutes {
    struct Entry: Encodable {
        var apnsId: String
        var uniqueId: String?
        var deviceToken: String
        var topic: String?
        var bundleId: String?
        var pushType: String?
        var priority: Int
        var environment: String
        var status: Int
        var reason: String?
        /// Why a token or certificate was refused (``APNsError/cause``); APNs' answer says only `reason`.
        var cause: String?
        var authentication: String
        var connectionId: UInt64
        var receivedAt: Int64
        var payloadBytes: Int
        var fault: AppliedFaultDTO?
    }

    struct Listing: Encodable {
        var accepted: Int
        var rejected: Int
        var pushes: [Entry]
    }

    static func register(on router: inout Router, pushes: RecentPushes) {
        router.get("/api/v1/pushes") { request, _ in
            .blocking {
                let query = QueryParameters(request.query)
                return try listing(pushes, limit: query.integer("limit", default: 100, in: 1...10_000), filter: PushLogFilter(query))
            }
        }
    }

    /// The newest `limit` pushes and the counts.
    static func listing(_ pushes: RecentPushes, limit: Int, filter: PushLogFilter = PushLogFilter()) -> HTTPResponse {
        let counts = pushes.counts
        let records = filter.isEmpty ? pushes.newest(limit) : pushes.newest(limit, where: filter.matches)
        let entries = records.map { record in
            Entry(
                apnsId: record.apnsID, uniqueId: record.uniqueID, deviceToken: record.deviceToken, topic: record.topic,
                bundleId: record.bundleID, pushType: record.pushType?.rawValue, priority: record.priority,
                environment: record.environment.rawValue,
                status: PushLogFilter.status(of: record),
                reason: record.rejection?.reason.rawValue, cause: record.rejection?.cause, authentication: describe(record.authentication),
                connectionId: record.connectionID, receivedAt: record.receivedAt, payloadBytes: record.payloadBytes,
                fault: record.fault.map(AppliedFaultDTO.init))
        }
        return .json(encoding: Listing(accepted: counts.accepted, rejected: counts.rejected, pushes: entries))
    }

    static func describe(_ authentication: PushAuthentication) -> String {
        switch authentication {
        case .token(let keyID, let teamID, _): "token:\(teamID)/\(keyID)"
        case .certificate(let bundleID): "certificate:\(bundleID)"
        case .none: "none"
        }
    }
}
