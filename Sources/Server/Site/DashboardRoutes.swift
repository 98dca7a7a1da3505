// APNs Sandbox — the web dashboard's files: `GET /` and `GET /dashboard/{file}`.
import Dashboard
import Foundation
import HTTP

/// Serves the dashboard (Sources/Dashboard/Assets): `/` is its page, `/dashboard/<file>` its styles and
/// scripts. The files hold no data — the page asks the admin API for everything, with the admin token when one
/// is needed — so they are public (AdminAccessPolicy), and every answer carries a Content-Security-Policy that
/// lets the page load only its own files and talk only to its own origin.
struct DashboardRoutes: Sendable {
    let assets: DashboardAssets

    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:",
        "connect-src 'self'", "form-action 'none'", "frame-ancestors 'none'", "base-uri 'none'",
    ].joined(separator: "; ")

    func register(on router: inout Router) {
        router.get("/") { request, _ in serve("index.html", request) }
        router.get("/dashboard/{file}") { request, parameters in serve(parameters["file"] ?? "", request) }
    }

    private func serve(_ name: String, _ request: HTTPRequest) -> HandlerResult {
        let ifNoneMatch = request.headers["if-none-match"]
        guard assets.readsFiles else { return .response(Self.answer(assets.asset(named: name), name, ifNoneMatch)) }
        let assets = assets
        return .blocking { Self.answer(assets.asset(named: name), name, ifNoneMatch) }
    }

    static func answer(_ asset: DashboardAsset?, _ name: String, _ ifNoneMatch: String?) -> HTTPResponse {
        guard let asset else {
            return .jsonError(status: 404, code: "not_found", message: "The dashboard has no file \(name)")
        }
        var response = HTTPResponse(status: 200, body: asset.bytes)
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces) == asset.etag || $0.trimmingCharacters(in: .whitespaces) == "*"
        }) {
            response = HTTPResponse(status: 304)
        }
        response.headers.set("content-type", asset.contentType)
        response.headers.set("etag", asset.etag)
        // Revalidated at every load: a rebuilt binary's page never runs with the last build's scripts.
        response.headers.set("cache-control", "no-cache")
        response.headers.set("content-security-policy", contentSecurityPolicy)
        response.headers.set("x-content-type-options", "nosniff")
        response.headers.set("x-frame-options", "DENY")
        response.headers.set("referrer-policy", "no-referrer")
        return response
    }
}
