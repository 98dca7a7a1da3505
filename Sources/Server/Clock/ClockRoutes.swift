// APNs Sandbox — `/api/v1/clock`: read the sandbox's time; freeze, advance, set, resume or reset a virtual clock.
import HTTP
import Sandbox

/// - `GET /api/v1/clock`: `now`, `nowMilliseconds`, `mode` (`real`, `running`, `frozen`), `virtual`,
///   `offsetMilliseconds`
/// - `POST /api/v1/clock/freeze`, `…/advance` (`milliseconds` or `seconds`), `…/set` (`at` or
///   `milliseconds`), `…/resume`, `…/real`: the new state. 409 `clock_not_virtual` without `clock.virtual`.
///
/// The changes run the timers that fall due (expiry, extension budgets, webhook retries, …) before they answer,
/// so they are blocking handlers (on the API's workers, never on a loop).
struct ClockRoutes: Sendable {
    let service: ClockService

    func register(on router: inout Router) {
        router.get("/api/v1/clock") { _, _ in
            .response(.json(encoding: service.state))
        }
        router.post("/api/v1/clock/freeze") { request, _ in
            .blocking {
                _ = try APIBody.decode(EmptyClockRequest.self, from: request.body, allowEmpty: true)
                return .json(encoding: try service.freeze())
            }
        }
        router.post("/api/v1/clock/resume") { request, _ in
            .blocking {
                _ = try APIBody.decode(EmptyClockRequest.self, from: request.body, allowEmpty: true)
                return .json(encoding: try service.resume())
            }
        }
        router.post("/api/v1/clock/real") { request, _ in
            .blocking {
                _ = try APIBody.decode(EmptyClockRequest.self, from: request.body, allowEmpty: true)
                return .json(encoding: try service.backToReal())
            }
        }
        router.post("/api/v1/clock/advance") { request, _ in
            .blocking { .json(encoding: try service.advance(byMilliseconds: try Self.advance(request.body))) }
        }
        router.post("/api/v1/clock/set") { request, _ in
            .blocking { .json(encoding: try service.set(toMilliseconds: try Self.instant(request.body))) }
        }
    }

    /// The milliseconds of an advance body: exactly one of `milliseconds` (whole) and `seconds` (may have a
    /// fraction), from 0 to 100 years.
    static func advance(_ body: [UInt8]) throws -> Int64 {
        guard let request = try APIBody.decode(AdvanceClockRequest.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        let limit = VirtualClock.maxJumpMilliseconds
        switch (request.milliseconds, request.seconds) {
        case (let milliseconds?, nil):
            guard (0...limit).contains(milliseconds) else {
                throw invalid("milliseconds must be a whole number from 0 to \(limit) (100 years)")
            }
            return milliseconds
        case (nil, let seconds?):
            guard seconds.isFinite, seconds >= 0, seconds * 1000 <= Double(limit) else {
                throw invalid("seconds must be a number from 0 to \(limit / 1000) (100 years)")
            }
            return Int64((seconds * 1000).rounded())
        default:
            throw invalid("give exactly one of milliseconds and seconds")
        }
    }

    /// The instant of a set body: exactly one of `at` (RFC 3339) and `milliseconds` (since the epoch), from
    /// 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.
    static func instant(_ body: [UInt8]) throws -> Int64 {
        guard let request = try APIBody.decode(SetClockRequest.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        let range = 0...VirtualClock.latestMilliseconds
        switch (request.at, request.milliseconds) {
        case (let text?, nil):
            guard let milliseconds = ISOTimestamp.milliseconds(parsing: text), range.contains(milliseconds) else {
                throw invalid("at must be an RFC 3339 instant from 1970 to 9999, such as \"2026-01-01T00:00:00Z\"")
            }
            return milliseconds
        case (nil, let milliseconds?):
            guard range.contains(milliseconds) else {
                throw invalid("milliseconds must be from 0 (1970-01-01T00:00:00Z) to \(range.upperBound) (9999-12-31T23:59:59.999Z)")
            }
            return milliseconds
        default:
            throw invalid("give exactly one of at and milliseconds")
        }
    }

    private static func invalid(_ message: String) -> APIError {
        APIError(status: 422, code: "invalid_clock", message: message)
    }
}

/// `freeze`, `resume` and `real` take no fields (an empty body or `{}`).
struct EmptyClockRequest: Decodable, Sendable, APIRequestBody {
    static let fields: [String] = []
}

/// `POST /api/v1/clock/advance`.
struct AdvanceClockRequest: Decodable, Sendable, APIRequestBody {
    static let fields = ["milliseconds", "seconds"]

    var milliseconds: Int64?
    var seconds: Double?
}

/// `POST /api/v1/clock/set`.
struct SetClockRequest: Decodable, Sendable, APIRequestBody {
    static let fields = ["at", "milliseconds"]

    var at: String?
    var milliseconds: Int64?
}
