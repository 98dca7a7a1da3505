// APNs Sandbox — the application behind the handler tests: a few paths that answer now, later, or in pieces.
import HTTP

/// Answers `/ok` at once (200, no body), `/big` at once with ``bigBodyBytes`` bytes, `/slow` when the test
/// calls ``respond(to:status:body:)``, and `/stream` with a streaming body whose writer the test holds.
/// Records the paths handled, in order, and each request's cancellation. Thread-safe.
final class TestBackend: Sendable {
    static let bigBodyBytes = 100_000

    private struct State {
        var calls: [String] = []
        var waiting: [@Sendable (HTTPResponse) -> Void] = []
        var cancellations: [RequestCancellation] = []
        var writers: [HTTPBodyWriter] = []
    }

    private let state = Locked(State())

    /// The paths handled so far, in order.
    var calls: [String] { state.value.calls }

    /// Every request's cancellation, in the order they were handled.
    var cancellations: [RequestCancellation] { state.value.cancellations }

    /// The streaming bodies' writers, in order.
    var writers: [HTTPBodyWriter] { state.value.writers }

    func handle(_ request: HTTPRequest) -> HandlerResult {
        state.mutate {
            $0.calls.append(String(request.path))
            $0.cancellations.append(request.cancellation)
        }
        switch request.path {
        case "/big":
            return .response(HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: Self.bigBodyBytes)))
        case "/slow":
            return .deferred { respond in self.state.mutate { $0.waiting.append(respond) } }
        case "/stream":
            return .stream(HTTPResponse(status: 200)) { writer in
                self.state.mutate { $0.writers.append(writer) }
                _ = writer.write(Array("data: hello\n\n".utf8))
            }
        default:
            return .response(HTTPResponse(status: request.path == "/ok" ? 200 : 404))
        }
    }

    /// Answers the oldest waiting `/slow` request.
    func respondToOldest(status: Int = 200, body: String = "") {
        var respond: (@Sendable (HTTPResponse) -> Void)?
        state.mutate { state in
            if !state.waiting.isEmpty { respond = state.waiting.removeFirst() }
        }
        respond?(HTTPResponse(status: status, body: Array(body.utf8)))
    }
}
