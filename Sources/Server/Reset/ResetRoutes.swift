// APNs Sandbox — `POST /api/v1/reset`: back to what the configuration seeds, for a test's `setUp`.
import APNsProtocol
import HTTP

/// `POST /api/v1/reset` with no body or `{}` (everything), `{"teamId": "…"}`, `{"bundleId": "…"}` or
/// `{"deviceToken": "…"}` (at most one): answers `200 {"reset": {…}}` once the reset is done
/// (``ResetService``; docs/reset-and-snapshots.md says what each scope touches).
struct ResetRoutes: Sendable {
    let service: ResetService

    func register(on router: inout Router) {
        router.post("/api/v1/reset") { request, _ in
            .blocking { try reset(request.body) }
        }
    }

    func reset(_ body: [UInt8]) throws -> HTTPResponse {
        let request = try APIBody.decode(ResetRequest.self, from: body, allowEmpty: true) ?? ResetRequest()
        let summary = try service.reset(try request.scope())
        return .json(encoding: ["reset": summary])
    }
}

/// The body of `POST /api/v1/reset`.
struct ResetRequest: Codable, Sendable, APIRequestBody {
    static let fields = ["teamId", "bundleId", "deviceToken"]

    var teamId: String?
    var bundleId: String?
    var deviceToken: String?

    /// The scope the body names (422 for more than one, or a malformed one).
    func scope() throws -> ResetScope {
        switch (teamId, bundleId, deviceToken) {
        case (nil, nil, nil):
            return .all
        case (let team?, nil, nil):
            guard !team.isEmpty, team.count <= 64 else {
                throw APIError(status: 422, code: "invalid_team_id", message: "teamId must be 1–64 characters")
            }
            return .team(team)
        case (nil, let bundleID?, nil):
            return .app(try APIBody.bundleIDs([bundleID])[0])
        case (nil, nil, let token?):
            guard let parsed = DeviceToken(hex: token) else {
                throw APIError(status: 422, code: "invalid_token", message: "deviceToken must be 32–400 hex digits (an even number)")
            }
            return .device(parsed.hex)
        default:
            throw APIError(status: 422, code: "invalid_scope", message: "Give at most one of teamId, bundleId and deviceToken")
        }
    }
}
