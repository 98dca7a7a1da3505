// APNs Sandbox — `GET /api/v1/events`: the live event stream (Server-Sent Events).
import Events
import Foundation
import HTTP
import Sandbox

/// `GET /api/v1/events?type=a,b&device=…&topic=…&lastEventId=…` streams events as `text/event-stream`.
///
/// Each event is `id: <n>`, `event: <type>`, `data: <envelope JSON>`; a comment line is sent every
/// heartbeat interval. `Last-Event-ID` (the header browsers send on reconnect, or the `lastEventId`
/// parameter) resumes after that event from the event log; without it the stream starts with the next
/// event. `type`, `device` and `topic` take comma-separated lists (or repeated parameters).
///
/// Streams are capped (`limits.maxEventStreams` overall: 503, `limits.maxEventStreamsPerClient` per IP
/// address: 429, both with a JSON error `too_many_event_streams`).
struct EventRoutes: Sendable {
    let hub: EventStreamHub

    func register(on router: inout Router) {
        router.get("/api/v1/events") { request, _ in
            try stream(request)
        }
    }

    private func stream(_ request: HTTPRequest) throws -> HandlerResult {
        let query = QueryParameters(request.query)
        var filter = EventFilter()
        for name in query.list("type") {
            guard let type = SandboxEventType(rawValue: name), type != .webhookTest else {
                throw APIError(
                    status: 400, code: "invalid_parameter",
                    message: "unknown event type \(name); known: "
                        + SandboxEventType.allCases.filter { $0 != .webhookTest }.map(\.rawValue).joined(separator: ", "))
            }
            filter.types.insert(type)
        }
        filter.deviceTokens = Set(query.list("device").map { $0.lowercased() })
        filter.topics = Set(query.list("topic"))
        let resumeText = request.headers["last-event-id"] ?? query["lastEventId"]
        var resumeAfter: Int64?
        if let resumeText, !resumeText.isEmpty {
            let digits = resumeText.hasPrefix("evt_") ? String(resumeText.dropFirst(4)) : resumeText
            guard let id = Int64(digits), id >= 0 else {
                throw APIError(status: 400, code: "invalid_parameter", message: "Last-Event-ID must be an event id")
            }
            resumeAfter = id
        }
        let head = HTTPResponse(status: 200, headers: [
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "x-accel-buffering": "no",
        ])
        let hub = self.hub
        let slot: EventStreamHub.Slot
        do throws(EventStreamHub.Refusal) {
            slot = try hub.reserve(client: request.connection.clientAddress)
        } catch {
            switch error {
            case .serverFull(let max):
                throw APIError(
                    status: 503, code: "too_many_event_streams",
                    message: "The server has \(max) event streams open (limits.maxEventStreams); try again later")
            case .clientFull(let max):
                throw APIError(
                    status: 429, code: "too_many_event_streams",
                    message: "This client (\(request.connection.clientAddress)) has \(max) event streams open "
                        + "(limits.maxEventStreamsPerClient); close one first")
            }
        }
        let subscription = (filter: filter, after: resumeAfter)
        return .stream(head) { writer in
            hub.subscribe(filter: subscription.filter, after: subscription.after, writer: writer, slot: slot)
        }
    }
}
