// APNs Sandbox — the one mapper from the services' refusals to the REST API's answers.
import HTTP

extension ServiceError: HTTPErrorResponse {
    /// The status, `code` and message of the REST API's problem document (docs/openapi.json's `Problem`).
    var apiError: APIError {
        switch self {
        case .notFound(let kind, let id):
            APIError(status: 404, code: "not_found", message: "No \(kind) \(id)")
        case .exists(let kind, let id):
            APIError(status: 409, code: "exists", message: "A \(kind) \(id) exists")
        case .limitReached(let kind, let limit):
            APIError(status: 409, code: "too_many", message: "At most \(limit) \(kind)s; delete some first")
        case .invalid(let kind, let message):
            APIError(status: 422, code: "invalid_\(kind)", message: message)
        case .stillLoading(let what):
            APIError(status: 503, code: "loading", message: "The \(what) are still being loaded; try again")
        case .clockNotVirtual:
            APIError(
                status: 409, code: "clock_not_virtual",
                message: "The clock is real time: set \"clock\": {\"virtual\": true} in the configuration file "
                    + "(clock.virtual) to freeze, advance or set it")
        }
    }

    var response: HTTPResponse { apiError.response }
}
