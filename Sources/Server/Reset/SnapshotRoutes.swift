// APNs Sandbox — `GET /api/v1/snapshot` and `POST /api/v1/snapshot`: the simulated world as one document.
import APNsProtocol
import ExtensionRuntime
import HTTP

/// - `GET /api/v1/snapshot?notifications=true&secrets=true`: the document (``SnapshotExport``); notifications
///   with their records only when asked, devices' keychain keys only with `secrets=true`; webhook secrets never.
/// - `POST /api/v1/snapshot` with a document: validated whole (a bad one changes nothing; 422 naming the path of
///   the bad field), then restored in place of the current state; answers `200 {"restored": {…}}`.
struct SnapshotRoutes: Sendable {
    let service: ResetService
    /// What an `exec` service extension in a document may run (as for the apps API).
    let execPolicy: ExecPolicy

    func register(on router: inout Router) {
        router.get("/api/v1/snapshot") { request, _ in
            .blocking {
                let query = QueryParameters(request.query)
                let document = try service.snapshot(
                    includingNotifications: try query.flag("notifications"), includingSecrets: try query.flag("secrets"))
                return .json(encoding: document)
            }
        }
        router.post("/api/v1/snapshot") { request, _ in
            .blocking { try restore(request.body) }
        }
    }

    func restore(_ body: [UInt8]) throws -> HTTPResponse {
        let participants = service.parts.participants.all
        let document = try SnapshotDocument.parse(
            body, sections: participants.map(\.name), execPolicy: execPolicy, now: service.parts.clock.nowMilliseconds)
        for participant in participants {
            guard let section = document.sections[participant.name] else { continue }
            do {
                try participant.validate(section)
            } catch let error as SnapshotSectionError {
                throw APIError(status: 422, code: "invalid_snapshot", message: error.inside(participant.name).description)
            } catch {
                throw APIError(status: 422, code: "invalid_snapshot", message: "\(participant.name): \(error)")
            }
        }
        return .json(encoding: ["restored": try service.restore(document)])
    }
}
