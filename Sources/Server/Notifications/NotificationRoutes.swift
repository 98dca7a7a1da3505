// APNs Sandbox — `/api/v1/notifications`: the inbox of every accepted push.
import APNsProtocol
import Foundation
import HTTP
import Sandbox

/// Lists, reads, waits for and deletes notification records.
///
/// - `GET /api/v1/notifications?device=&topic=&bundleId=&status=a,b&pushType=&outcome=&since=&until=&q=&limit=&offset=`
/// - `GET /api/v1/notifications/{apnsId}?wait=SECONDS`: with `wait`, answers when the record is final
///   (or at the timeout, with its current state).
/// - `GET /api/v1/notifications/wait?count=N&timeout=SECONDS&…filters`: answers when N final records
///   match (408 with the current count at the timeout).
/// - `DELETE /api/v1/notifications?…filters` (at least one filter, or `all=true`); the attachment files
///   of deleted records are removed in the background.
struct NotificationRoutes: Sendable {
    let notifications: any NotificationRepository
    let waiters: NotificationWaiters
    /// Attachments live under `<dataDirectory>/attachments/`.
    let dataDirectory: String
    /// Where a long-poll's first check of the store runs (the pool of the API's blocking handlers).
    let work: BlockingWorkPool
    /// Told which records were deleted (their attachment files are removed in the background).
    var onDelete: @Sendable ([NotificationKey]) -> Void = { _ in }

    static let finalStatuses: [NotificationStatus] = NotificationStatus.allCases.filter(\.isFinal)

    func register(on router: inout Router) {
        let errors = router.errors
        router.get("/api/v1/notifications") { request, _ in
            .blocking { try list(QueryParameters(request.query)) }
        }
        router.on("DELETE", "/api/v1/notifications") { request, _ in
            .blocking { try delete(QueryParameters(request.query)) }
        }
        router.get("/api/v1/notifications/wait") { request, _ in
            let wait = try waitForCount(QueryParameters(request.query), cancellation: request.cancellation)
            return onWorker(request, errors, wait)
        }
        router.get("/api/v1/notifications/{apnsId}") { request, parameters in
            let query = QueryParameters(request.query)
            let apnsID = parameters["apnsId"] ?? ""
            // The plain read is blocking work; a long-poll's first read runs on a worker too, then it parks.
            guard try query.seconds("wait", in: 0...300) ?? 0 > 0 else {
                return .blocking { .json(encoding: NotificationDTO(try find(apnsID, query))) }
            }
            let wait = try waiting(for: apnsID, query, cancellation: request.cancellation)
            return onWorker(request, errors, wait)
        }
        router.get("/api/v1/notifications/{apnsId}/attachments/{identifier}") { request, parameters in
            .blocking {
                try attachment(apnsID: parameters["apnsId"] ?? "", identifier: parameters["identifier"] ?? "",
                               device: QueryParameters(request.query)["device"]?.lowercased())
            }
        }
    }

    /// Serves an attached file from the notification's attachment store (`device`: which device's
    /// notification, when the apns-id went to several; the newest otherwise).
    func attachment(apnsID: String, identifier: String, device: String?) throws -> HTTPResponse {
        guard let record = try notifications.notification(apnsID: apnsID, deviceToken: device) else {
            throw APIError(status: 404, code: "not_found", message: "No notification \(apnsID)")
        }
        guard let attachment = record.displayed?.attachments.first(where: { $0.identifier == identifier }),
              !attachment.path.contains(".."), !attachment.path.hasPrefix("/"),
              let data = FileManager.default.contents(atPath: dataDirectory + "/attachments/" + attachment.path)
        else {
            throw APIError(status: 404, code: "not_found", message: "No attachment \(identifier)")
        }
        return HTTPResponse(status: 200, headers: ["content-type": attachment.type], body: Array(data))
    }

    func filter(from query: QueryParameters) throws -> NotificationFilter {
        // Tokens are stored in lower case; clients may write them in either.
        var filter = NotificationFilter(deviceToken: query["device"]?.lowercased(), topic: query["topic"], bundleID: query["bundleId"])
        let statuses = try query.list("status").map { status in
            guard let parsed = NotificationStatus(rawValue: status) else {
                throw APIError(status: 400, code: "invalid_parameter", message: "status must be one of \(NotificationStatus.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return parsed
        }
        if statuses.count == 1 { filter.status = statuses[0] } else if !statuses.isEmpty { filter.statuses = statuses }
        if let until = query["until"] {
            guard let value = Int64(until), value >= 0 else {
                throw APIError(status: 400, code: "invalid_parameter", message: "until must be milliseconds since the epoch")
            }
            filter.until = value
        }
        filter.search = query["q"]
        let pushTypes = try query.list("pushType").map { type in
            guard PushType(rawValue: type) != nil else {
                throw APIError(status: 400, code: "invalid_parameter", message: "pushType must be one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return type
        }
        if !pushTypes.isEmpty { filter.pushTypes = pushTypes }
        let outcomes = try query.list("outcome").map { outcome in
            guard let parsed = DisplayOutcome(rawValue: outcome) else {
                throw APIError(status: 400, code: "invalid_parameter", message: "outcome must be one of \(DisplayOutcome.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return parsed
        }
        if !outcomes.isEmpty { filter.outcomes = outcomes }
        if let since = query["since"] {
            guard let value = Int64(since), value >= 0 else {
                throw APIError(status: 400, code: "invalid_parameter", message: "since must be milliseconds since the epoch")
            }
            filter.since = value
        }
        if let after = query["after"] {
            guard let value = Int64(after), value >= 0 else {
                throw APIError(status: 400, code: "invalid_parameter", message: "after must be a cursor from an earlier answer")
            }
            filter.after = value
        }
        return filter
    }

    func list(_ query: QueryParameters) throws -> HTTPResponse {
        let filter = try filter(from: query)
        let limit = try query.integer("limit", default: 50, in: 1...1000)
        let offset = try query.integer("offset", default: 0, in: 0...Int(Int32.max))
        // Read first: a record created while the page is read is after the cursor (seen again, never missed).
        let cursor = try notifications.latestCursor()
        let page = try notifications.notifications(matching: filter, limit: limit, offset: offset)
        let total = try notifications.count(matching: filter)
        return .json(encoding: NotificationListDTO(
            total: total, limit: limit, offset: offset, cursor: cursor, notifications: page.map(NotificationDTO.init)))
    }

    func delete(_ query: QueryParameters) throws -> HTTPResponse {
        let filter = try filter(from: query)
        if filter == NotificationFilter() && query["all"] != "true" {
            throw APIError(status: 400, code: "filter_required", message: "Give a filter (device, topic, bundleId, status, since, until, q, pushType, outcome) or all=true")
        }
        let deleted = try notifications.deleteNotifications(matching: filter)
        onDelete(deleted)
        return .json(Array("{\"deleted\":\(deleted.count)}".utf8))
    }

    /// The notification with this apns-id on `?device=` (the newest with it when no device is given).
    func find(_ apnsID: String, _ query: QueryParameters) throws -> NotificationRecord {
        guard let record = try notifications.notification(apnsID: apnsID, deviceToken: query["device"]?.lowercased()) else {
            throw APIError(status: 404, code: "not_found", message: "No notification \(apnsID)")
        }
        return record
    }

    /// A long-poll's body: it runs on a worker (``onWorker(_:_:_:)``) and calls `respond` once, at once
    /// when there is nothing to wait for, else when its waiter fires.
    typealias WorkerBody = @Sendable (_ respond: @escaping @Sendable (HTTPResponse) -> Void) throws -> Void

    /// Runs `body` on a worker thread, never on the connection's loop; what it throws is answered by the
    /// router's error mapping.
    private func onWorker(_ request: HTTPRequest, _ errors: ErrorResponder, _ body: @escaping WorkerBody) -> HandlerResult {
        let work = self.work
        return .deferred { respond in
            work.submit {
                do {
                    try body(respond)
                } catch {
                    respond(errors.response(for: error, to: request))
                }
            }
        }
    }

    /// The notification with this apns-id on `?device=` (the newest with it when no device is given),
    /// at once when it is final (or `wait` is 0), else once it is final or `wait` runs out.
    /// A client that leaves (`cancellation`) takes its waiter with it.
    func waiting(
        for apnsID: String, _ query: QueryParameters, cancellation: RequestCancellation = RequestCancellation()
    ) throws -> WorkerBody {
        let wait = try query.seconds("wait", in: 0...300) ?? 0
        let repository = notifications
        let parked = waiters
        return { [self] respond in
            let record = try find(apnsID, query)
            if wait <= 0 || record.status.isFinal {
                return respond(.json(encoding: NotificationDTO(record)))
            }
            // The wait follows the notification found (its device), even when the apns-id goes to another
            // device meanwhile.
            let device = record.deviceToken
            let waiter = parked.wait(forFinal: apnsID, deviceToken: device, timeoutSeconds: wait) {
                respond(Self.currentAnswer(repository, apnsID: apnsID, deviceToken: device, fallback: record))
            }
            cancellation.onCancel { parked.cancel(waiter) }
            // The record may have become final between the read above and parking the waiter.
            if let now = Self.read(repository, apnsID: apnsID, deviceToken: device), now.status.isFinal {
                parked.notify(now)
            }
        }
    }

    static func read(_ repository: any NotificationRepository, apnsID: String, deviceToken: String) -> NotificationRecord? {
        do {
            return try repository.notification(apnsID: apnsID, deviceToken: deviceToken)
        } catch {
            return nil
        }
    }

    static func currentAnswer(
        _ repository: any NotificationRepository, apnsID: String, deviceToken: String, fallback: NotificationRecord
    ) -> HTTPResponse {
        .json(encoding: NotificationDTO(read(repository, apnsID: apnsID, deviceToken: deviceToken) ?? fallback))
    }

    /// Answers when `count` records matching the filter are final (408 with the current page at `timeout`).
    /// A client that leaves (`cancellation`) takes its waiter with it.
    func waitForCount(
        _ query: QueryParameters, cancellation: RequestCancellation = RequestCancellation()
    ) throws -> WorkerBody {
        let filter = try filter(from: query)
        let count = try query.integer("count", default: 1, in: 1...100_000)
        let timeout = try query.seconds("timeout", in: 0...300) ?? 10
        let notifications = self.notifications
        let waiters = self.waiters
        let finalCount: @Sendable () -> Int = {
            Self.finalCount(notifications, filter)
        }
        return { [self] respond in
            let already = finalCount()
            if already >= count || timeout == 0 {
                return respond(waitAnswer(filter: filter, count: count, satisfied: already >= count))
            }
            let waiter = waiters.wait(for: filter, missing: count - already, until: { finalCount() >= count }, timeoutSeconds: timeout) {
                respond(waitAnswer(filter: filter, count: count, satisfied: finalCount() >= count))
            }
            cancellation.onCancel { waiters.cancel(waiter) }
            if finalCount() >= count, let any = try? notifications.notifications(matching: filter, limit: 1, offset: 0).first {
                waiters.notify(any)
            }
        }
    }

    /// Final records matching `filter` (all final statuses unless the filter names some).
    static func finalCount(_ notifications: any NotificationRepository, _ filter: NotificationFilter) -> Int {
        if let status = filter.status {
            return status.isFinal ? ((try? notifications.count(matching: filter)) ?? 0) : 0
        }
        let wanted = filter.statuses.map { named in finalStatuses.filter(named.contains) } ?? finalStatuses
        return wanted.reduce(0) { total, status in
            var specific = filter
            specific.statuses = nil
            specific.status = status
            return total + ((try? notifications.count(matching: specific)) ?? 0)
        }
    }

    func waitAnswer(filter: NotificationFilter, count: Int, satisfied: Bool) -> HTTPResponse {
        let cursor = (try? notifications.latestCursor()) ?? 0
        let records = (try? notifications.notifications(matching: filter, limit: min(count, 1000), offset: 0)) ?? []
        let total = Self.finalCount(notifications, filter)
        let page = NotificationListDTO(
            total: total, limit: min(count, 1000), offset: 0, cursor: cursor, notifications: records.map(NotificationDTO.init))
        return .json(status: satisfied ? 200 : 408, encoding: page)
    }
}
