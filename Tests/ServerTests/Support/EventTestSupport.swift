// APNs Sandbox — end-to-end test support for events: an SSE client (curl -N) and a webhook receiver.
import Foundation
import Glibc
import TestProcessSupport

/// One Server-Sent Event as a client parses it.
struct SSEEvent: Sendable {
    var id: Int64?
    var event: String?
    var data: String

    var json: [String: Any]? { jsonObject(data) }
    /// `data.apnsId` of the envelope.
    var apnsID: String? { (json?["data"] as? [String: Any])?["apnsId"] as? String }
}

/// `curl -N` reading an event stream into a file; parses the complete events received so far.
final class SSEClient: Sendable {
    private let child: ChildProcess

    init(_ url: String, _ arguments: [String] = []) throws {
        child = try ChildProcess("/usr/bin/curl", arguments: ["-sSN", "--max-time", "90"] + arguments + [url])
    }

    deinit { stop() }

    /// The raw stream so far.
    var text: String { child.currentStdout }

    var events: [SSEEvent] { Self.parse(text) }

    func stop() {
        child.send(signal: SIGKILL)
    }

    /// Waits until `done(events)` or the timeout; returns the events then.
    @discardableResult
    func waitFor(timeout: Double = TestTime.seconds(15), _ done: ([SSEEvent]) -> Bool) async throws -> [SSEEvent] {
        let deadline = monotonicSeconds() + timeout
        while true {
            let events = self.events
            if done(events) || monotonicSeconds() > deadline { return events }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    /// Waits until the stream has started (the server's first comment arrived).
    func waitUntilConnected() async throws {
        let deadline = monotonicSeconds() + TestTime.seconds(30)
        while !text.contains(": connected") {
            guard monotonicSeconds() < deadline else { throw ProcessError("the event stream did not start: \(child.currentStderr)") }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    /// The complete events (those followed by a blank line) in `text`, per the SSE format.
    static func parse(_ text: String) -> [SSEEvent] {
        var events: [SSEEvent] = []
        let blocks = text.components(separatedBy: "\n\n").dropLast()
        for block in blocks {
            var event = SSEEvent(id: nil, event: nil, data: "")
            var hasData = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix(":") {
                let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                let value = parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""
                switch parts[0] {
                case "id": event.id = Int64(value)
                case "event": event.event = value
                case "data":
                    event.data += (hasData ? "\n" : "") + value
                    hasData = true
                default: break
                }
            }
            if hasData { events.append(event) }
        }
        return events
    }
}

/// `Tests/Python/webhook_receiver.py`: verifies each request with the Standard Webhooks reference library.
final class WebhookReceiver: Sendable {
    struct Request: Sendable {
        var number: Int
        var messageID: String
        var valid: Bool
        var answered: Int
        var type: String
        var eventID: String
        var apnsID: String?
    }

    let port: Int
    private let child: ChildProcess

    /// Starts the receiver; `failFirst` requests are answered 500, then `status`.
    init(secret: String, port: Int = 0, failFirst: Int = 0, status: Int = 200) async throws {
        child = try ChildProcess("python3", arguments: [
            TestPaths.packageRoot + "/Tests/Python/webhook_receiver.py", "--secret", secret, "--port", "\(port)",
            "--fail-first", "\(failFirst)", "--status", "\(status)",
        ])
        // Python can take long to start while the whole suite starts at once (a CI run saw the port printed between
        // 30 and 37 s): a generous deadline, and an early end if it exits.
        var found: Int?
        let started = monotonicSeconds()
        let deadline = started + TestTime.seconds(90)
        while monotonicSeconds() < deadline, child.wait(timeout: 0) == nil {
            if let line = child.currentStdout.split(separator: "\n").first, let number = Int(line) {
                found = number
                break
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        guard let found else {
            let status = child.wait(timeout: 0).map { "exited with status \($0)" } ?? "still running"
            throw ProcessError(String(format: "the webhook receiver did not start within %.1f s (%@): stdout %@, stderr %@",
                                      monotonicSeconds() - started, status, child.currentStdout, child.currentStderr))
        }
        self.port = found
    }

    deinit { child.send(signal: SIGKILL) }

    var url: String { "http://127.0.0.1:\(port)/hook" }

    var requests: [Request] {
        child.currentStdout.split(separator: "\n").dropFirst().compactMap { line in
            guard let json = jsonObject(String(line)) else { return nil }
            return Request(
                number: json["n"] as? Int ?? 0, messageID: json["id"] as? String ?? "", valid: json["valid"] as? Bool ?? false,
                answered: json["answered"] as? Int ?? 0, type: json["type"] as? String ?? "",
                eventID: json["eventId"] as? String ?? "", apnsID: (json["data"] as? [String: Any])?["apnsId"] as? String)
        }
    }

    @discardableResult
    func waitFor(timeout: Double = TestTime.seconds(20), _ done: ([Request]) -> Bool) async throws -> [Request] {
        let deadline = monotonicSeconds() + timeout
        while true {
            let requests = self.requests
            if done(requests) || monotonicSeconds() > deadline { return requests }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
    }
}

/// Pushes an alert over h2c with the test server's token; returns the apns-id of a 200, else "".
func pushAlert(_ server: TestServer, device: String = deviceToken, body: String = #"{"aps":{"alert":"Hi"}}"#) async throws -> String {
    try await pushAlert(base: server.httpBase, authorization: server.authorizationHeader, device: device, body: body)
}

/// Pushes an alert over h2c to `base` (`http://host:port`); returns the apns-id of a 200, else "".
func pushAlert(
    base: String, authorization: String, device: String = deviceToken, body: String = #"{"aps":{"alert":"Hi"}}"#
) async throws -> String {
    let output = try await curl([
        "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-X", "POST", "\(base)/3/device/\(device)",
        "-H", authorization, "-H", "apns-topic: \(testTopic)", "-d", body,
    ])
    guard output.stdoutText.hasPrefix("HTTP/2 200") else { return "" }
    return output.stdoutText.split(separator: "\r\n").first { $0.lowercased().hasPrefix("apns-id:") }
        .map { $0.dropFirst("apns-id:".count).trimmingCharacters(in: .whitespaces) } ?? ""
}

/// A JSON request to the REST API: the body and the status.
func apiRequest(_ method: String, _ url: String, _ body: String? = nil) async throws -> (status: Int, json: [String: Any]?) {
    var args = ["-X", method, url, "-w", "\n%{http_code}"]
    if let body { args += ["-H", "content-type: application/json", "-d", body] }
    let output = try await curl(args)
    let text = output.stdoutText
    guard let split = text.lastIndex(of: "\n"), let status = Int(text[text.index(after: split)...]) else {
        throw ProcessError("no status from curl: \(output)")
    }
    return (status, jsonObject(String(text[..<split])))
}
