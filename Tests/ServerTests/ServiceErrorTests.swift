// APNs Sandbox — the one mapper from the services' refusals to the REST API's problem documents.
@testable import Server
import Testing

@Suite struct ServiceErrorTests {
    /// Each refusal keeps the status, `code` and message the API has always answered for it.
    @Test(arguments: [
        (ServiceError.notFound(kind: "device", id: "ab12"), 404, "not_found", "No device ab12"),
        (.exists(kind: "fault rule", id: "r1"), 409, "exists", "A fault rule r1 exists"),
        (.limitReached(kind: "fault rule", limit: 1000), 409, "too_many", "At most 1000 fault rules; delete some first"),
        (.invalid(kind: "fault", message: "action: required"), 422, "invalid_fault", "action: required"),
        (.stillLoading(what: "stored devices"), 503, "loading", "The stored devices are still being loaded; try again"),
        (.clockNotVirtual, 409, "clock_not_virtual",
         "The clock is real time: set \"clock\": {\"virtual\": true} in the configuration file (clock.virtual) to freeze, advance or set it"),
    ])
    func answersAsTheAPIDocuments(_ error: ServiceError, _ status: Int, _ code: String, _ message: String) {
        #expect(error.apiError.status == status)
        #expect(error.apiError.code == code)
        #expect(error.apiError.message == message)
        #expect(error.response.status == status)
    }
}
