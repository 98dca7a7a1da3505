// APNs Sandbox — handler harnesses whose backend answers some paths with a connection fault.
import Support

@testable import HTTP

extension HandlerHarness {
    /// A harness whose requests `backend` handles (and records); the paths in `faults` are answered 200 with
    /// `body` and that path's fault.
    convenience init(
        _ backend: TestBackend, faults: [String: ConnectionFault], body: String = "",
        _ change: (inout HTTPServerOptions) -> Void = { _ in }
    ) throws {
        var options = HTTPServerOptions()
        change(&options)
        try self.init(options: options) { request in
            let result = backend.handle(request)
            guard let fault = faults[String(request.path)] else { return result }
            var response = HTTPResponse(status: 200, body: Array(body.utf8))
            response.connectionFault = fault
            return .response(response)
        }
    }
}

/// Milliseconds in nanoseconds.
func ms(_ milliseconds: UInt64) -> UInt64 { milliseconds * 1_000_000 }

/// Monotonic nanoseconds since `start`.
func elapsed(since start: UInt64) -> UInt64 { MonotonicClock.nanoseconds() &- start }
