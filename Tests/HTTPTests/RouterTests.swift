// APNs Sandbox — routing by method and path.
import HTTP
import Support
import Testing

@Suite struct RouterTests {
    private func status(_ result: HandlerResult) -> Int? {
        if case .response(let response) = result { return response.status }
        return nil
    }

    private func body(_ result: HandlerResult) -> String {
        if case .response(let response) = result { return String(decoding: response.body, as: UTF8.self) }
        return ""
    }

    private func makeRouter() -> Router {
        var router = Router()
        router.post("/3/device/{token}") { _, parameters in
            .response(.text(parameters["token"] ?? "-"))
        }
        router.get("/api/v1/devices/{token}/notification-center") { _, parameters in
            .response(.text("center:" + (parameters["token"] ?? "-")))
        }
        router.get("/files/{rest...}") { _, parameters in .response(.text(parameters["rest"] ?? "-")) }
        router.get("/n/{id}/attachments/{name}/{rest...}") { _, parameters in
            .response(.text([parameters["id"], parameters["name"], parameters["rest"], parameters["other"]]
                .map { $0 ?? "-" }.joined(separator: "|")))
        }
        return router
    }

    /// Path parameters are captured (and percent-decoded); queries and repeated slashes are ignored.
    @Test func capturesParameters() {
        let router = makeRouter()
        #expect(body(router.respond(to: HTTPRequest(method: "POST", target: "/3/device/abc"))) == "abc")
        #expect(body(router.respond(to: HTTPRequest(method: "POST", target: "/3/device/a%20b?x=1"))) == "a b")
        #expect(body(router.respond(to: HTTPRequest(method: "POST", target: "//3//device/abc/"))) == "abc")
        #expect(body(router.respond(to: HTTPRequest(method: "GET", target: "/api/v1/devices/t1/notification-center"))) == "center:t1")
        #expect(body(router.respond(to: HTTPRequest(method: "GET", target: "/files/a/b/c.txt"))) == "a/b/c.txt")
        // Three captures (two past the first), non-ASCII and escapes in each; `{rest...}` is not decoded.
        #expect(body(router.respond(to: HTTPRequest(method: "GET", target: "/n/%C3%A9t%C3%A9/attachments/gr%C3%BC%C3%9Fe%2Fx/ü/a%20b?q")))
            == "été|grüße/x|ü/a%20b|-")
    }

    /// Unknown paths are 404; a known path with another method is 405 with `Allow`.
    @Test func answersNotFoundAndMethodNotAllowed() {
        let router = makeRouter()
        #expect(status(router.respond(to: HTTPRequest(method: "POST", target: "/3/device"))) == 404)
        #expect(status(router.respond(to: HTTPRequest(method: "POST", target: "/3/device/a/b"))) == 404)
        #expect(status(router.respond(to: HTTPRequest(method: "GET", target: "/nope"))) == 404)
        let result = router.respond(to: HTTPRequest(method: "GET", target: "/3/device/abc"))
        guard case .response(let response) = result else {
            Issue.record("expected an immediate response")
            return
        }
        #expect(response.status == 405)
        #expect(response.headers["allow"] == "POST")
        #expect(response.headers["content-type"] == "application/json")
        #expect(String(decoding: response.body, as: UTF8.self).contains("\"code\":\"method_not_allowed\""))
    }

    /// HEAD is served by the GET route.
    @Test func servesHeadWithGetRoute() {
        let router = makeRouter()
        #expect(status(router.respond(to: HTTPRequest(method: "HEAD", target: "/files/x"))) == 200)
    }

    /// JSON errors escape what they echo.
    @Test func escapesJSONErrorMessages() {
        let response = HTTPResponse.jsonError(status: 400, code: "bad", message: "quote \" and \\ and \n")
        #expect(String(decoding: response.body, as: UTF8.self)
            == #"{"error":{"code":"bad","message":"quote \" and \\ and \n"}}"#)
    }

    /// Header lookups are case-insensitive and `set` replaces every earlier value.
    @Test func fieldsAreCaseInsensitive() {
        var fields: HTTPFields = ["Content-Type": "a"]
        fields.append("X-Multi", "1")
        fields.append("x-multi", "2")
        #expect(fields["content-type"] == "a")
        #expect(fields.values(for: "X-MULTI") == ["1", "2"])
        fields.set("x-multi", "3")
        #expect(fields.values(for: "x-multi") == ["3"])
        fields.set("content-type", nil)
        #expect(!fields.contains("content-type"))
    }

    private struct Teapot: HTTPErrorResponse {
        var response: HTTPResponse { .jsonError(status: 418, code: "teapot", message: "short and stout") }
    }

    private struct Secret: Error, CustomStringConvertible {
        var description: String { "no such table: secrets (SELECT * FROM secrets)" }
    }

    /// What handlers (or their blocking work) throw goes through the router's one ErrorResponder: an
    /// error that is a response answers with it; any other is a 500 naming an id, its text only logged.
    @Test func mapsThrownErrorsInOnePlace() throws {
        let sink = LogSink.capturing()
        var router = Router(errors: ErrorResponder(logger: Logger(label: "test", sink: sink)))
        router.get("/teapot") { _, _ in throw Teapot() }
        router.get("/secret") { _, _ in throw Secret() }
        router.get("/blocking-secret") { _, _ in .blocking { throw Secret() } }
        #expect(status(router.respond(to: HTTPRequest(method: "GET", target: "/teapot"))) == 418)
        let secret = router.respond(to: HTTPRequest(method: "GET", target: "/secret"))
        #expect(status(secret) == 500)
        #expect(body(secret).contains("\"code\":\"internal\""))
        #expect(!body(secret).contains("secrets"))
        guard case .blocking(let job) = router.respond(to: HTTPRequest(method: "GET", target: "/blocking-secret")) else {
            Issue.record("expected blocking work")
            return
        }
        let answered = try job()
        #expect(answered.status == 500)
        #expect(!String(decoding: answered.body, as: UTF8.self).contains("secrets"))
        let lines = sink.capturedLines
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.contains("no such table: secrets") && $0.contains("error.id=") })
        let id = try #require(body(secret).firstMatch(of: /error\.id=([0-9a-f]{12})/)?.1)
        #expect(lines.first?.contains(String(id)) == true)
    }
}
