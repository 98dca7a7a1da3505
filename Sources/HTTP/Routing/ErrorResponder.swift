// APNs Sandbox — the one place a handler's error becomes a response.
import Support

/// An error meant for the client: it carries the response that says what was wrong with the request
/// (the API's `400 invalid_parameter`, `404 not_found`, …).
public protocol HTTPErrorResponse: Error {
    var response: HTTPResponse { get }
}

/// Turns errors thrown by handlers into responses.
///
/// An ``HTTPErrorResponse`` gives its own response. Any other error is internal (a store failure, a
/// bug): it is logged with a new id, the request's method and path and the error's text, and
/// answered `500 {"error":{"code":"internal",…}}` naming only that id. Its text can carry SQL, file
/// paths or other detail, so it never reaches the client; the id finds the log line.
public struct ErrorResponder: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func response(for error: any Error, to request: HTTPRequest) -> HTTPResponse {
        if let error = error as? any HTTPErrorResponse { return error.response }
        let id = Self.newID()
        logger.error("internal error answering a request", [
            ("error.id", id), ("http.method", request.method), ("http.path", String(request.path)),
            ("conn.id", "\(request.connection.id)"), ("error", "\(error)"),
        ])
        return .jsonError(
            status: 500, code: "internal",
            message: "Internal error \(id): the server could not complete the request; its log has the details under error.id=\(id)")
    }

    /// 12 hex digits: short enough to read out, unique enough to find one log line.
    static func newID() -> String {
        String(UUIDGenerator.make().replacingDashes().prefix(12))
    }
}

extension String {
    fileprivate func replacingDashes() -> String { String(filter { $0 != "-" }) }
}
