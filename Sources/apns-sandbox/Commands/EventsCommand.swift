// APNs Sandbox — `events`: the live event stream (Server-Sent Events), one line per event.
import Foundation
import HTTPClient
import Synchronization
import Support

extension CommandRegistry {
    static let events = Command(
        name: "events",
        summary: "Follows the event stream (GET /api/v1/events) and prints one line per event until interrupted.",
        options: [
            Option("--type", "A,B", "only these event types (push.accepted, notification.displayed, …)"),
            Option("--device", "TOKEN", "only this device's events"),
            Option("--topic", "TOPIC", "only this topic's events"),
            Option("--last-event-id", "ID", "resume after this event (from the event log)"),
            Option("--count", "N", "stop after N events (exit 0)"),
            Option("--idle-timeout", "SECONDS", "give up (exit 1) when not even a heartbeat arrives for this long (default 45)"),
        ],
        notes: ["--json prints each event's JSON envelope on a line of its own (NDJSON)."],
        run: runEvents)

    static func runEvents(_ arguments: ParsedArguments) throws -> Int32 {
        let count = try arguments.integer("--count", in: 1...Int64(Int32.max))
        let idleSeconds = try arguments.seconds("--idle-timeout") ?? 45
        guard idleSeconds > 0 else { throw UsageError("--idle-timeout must be more than 0 seconds") }
        var query: [String] = []
        for (flag, name) in [("--type", "type"), ("--device", "device"), ("--topic", "topic"), ("--last-event-id", "lastEventId")] {
            if let value = arguments.value(flag) { query.append("\(name)=\(ServerConnection.escape(value))") }
        }
        let api = try ServerConnection(arguments)
        let printer = EventPrinter(json: arguments.json, limit: count.map(Int.init))
        // The printer runs here, off the HTTP client's thread (whose onChunk must never block on stdout); the
        // stream's end goes through the same queue, after every chunk before it.
        let writer = DispatchQueue(label: "apns-sandbox.events.writer")
        let done = DispatchSemaphore(value: 0)
        let ending = Locked<Result<HTTPClient.Response, HTTPClient.Failure>?>(nil)
        let lastChunk = Locked(DispatchTime.now())
        let path = "/api/v1/events" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        return try withExtendedLifetime(api) {
            let handle = api.stream(path, explicitTimeout: arguments.value("--timeout") != nil, onChunk: { chunk in
                lastChunk.withLock { $0 = .now() }
                writer.async { if printer.take(chunk) { done.signal() } }
            }, completion: { result in
                writer.async {
                    ending.withLock { $0 = result }
                    done.signal()
                }
            })
            // Heartbeats come every 15 s by default: a stream silent for longer than --idle-timeout has lost
            // its server (a vanished host sends no FIN).
            let idleNanoseconds = UInt64(idleSeconds * 1e9)
            while done.wait(timeout: .now() + min(1, idleSeconds)) == .timedOut {
                let silent = DispatchTime.now().uptimeNanoseconds - lastChunk.withLock { $0 }.uptimeNanoseconds
                if silent >= idleNanoseconds {
                    handle.cancel()
                    throw CommandFailure("GET \(path): nothing arrived for \(arguments.value("--idle-timeout") ?? "45") s (not even a heartbeat)")
                }
            }
            if writer.sync(execute: { printer.isDone }) {
                handle.cancel()
                return 0
            }
            switch ending.withLock({ $0 }) {
            case .success(let response) where response.status != 200:
                let body = writer.sync { printer.received }
                throw CommandFailure("GET \(path): \(ServerConnection.errorText(status: response.status, body: body))")
            case .failure(let failure):
                throw CommandFailure("GET \(path): \(failure)")
            default:
                throw CommandFailure("GET \(path): the server ended the stream")
            }
        }
    }
}

/// Parses Server-Sent Events from the stream's chunks and prints each event as it completes.
///
/// `@unchecked Sendable`: every access (``take(_:)``, ``isDone``, ``received``) runs on one serial queue, the
/// events command's writer.
final class EventPrinter: @unchecked Sendable {
    private let json: Bool
    private let limit: Int?
    private var pending: [UInt8] = []
    private var data: [String] = []
    private var printed = 0
    /// The first bytes received (an error answer's body).
    private(set) var received: [UInt8] = []
    private(set) var isDone = false

    init(json: Bool, limit: Int?) {
        self.json = json
        self.limit = limit
    }

    /// Takes a chunk; true once the limit of events is reached.
    func take(_ chunk: [UInt8]) -> Bool {
        guard !isDone else { return false }
        if received.count < 4096 { received += chunk.prefix(4096 - received.count) }
        pending += chunk
        while let newline = pending.firstIndex(of: 0x0A) {
            var line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            if line.hasSuffix("\r") { line.removeLast() }
            if line.isEmpty {
                guard !data.isEmpty else { continue }
                emit(data.joined(separator: "\n"))
                data = []
                if let limit, printed >= limit {
                    isDone = true
                    return true
                }
            } else if line.hasPrefix("data:") {
                data.append(String(line.dropFirst(5).drop { $0 == " " }))
            }
            // `id:`, `event:` and comments (heartbeats): the envelope has the id and type already.
        }
        return false
    }

    private func emit(_ envelope: String) {
        printed += 1
        let line = json ? envelope : Self.summary(envelope)
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// `<timestamp>  <type>  <apns-id>  <device>  <topic>  <status>  <title or reason>`.
    static func summary(_ envelope: String) -> String {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(envelope.utf8))) as? [String: Any] else {
            return envelope
        }
        let data = object["data"] as? [String: Any] ?? [:]
        let displayed = data["displayed"] as? [String: Any]
        let fields: [String?] = [
            object["timestamp"] as? String, object["type"] as? String, (data["apnsId"] as? String).map { String($0.prefix(8)) },
            (data["deviceToken"] as? String).map { String($0.prefix(8)) + "…" }, data["topic"] as? String,
            displayed.map { "\"\(Output.text($0["title"] ?? $0["body"]))\"" } ?? (data["reason"] as? String),
        ]
        return fields.compactMap { $0 }.joined(separator: "  ")
    }
}
