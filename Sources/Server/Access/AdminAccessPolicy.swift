// APNs Sandbox — who may use the admin side: token, cross-site and DNS-rebinding rules (docs/security.md).
import Crypto
import Foundation
import HTTP

/// Decides, per request, whether it may reach the admin side (`/api/v1`): a pure value, no I/O.
///
/// ### Surfaces
/// - **provider**: `/3/…`, APNs' own endpoint with APNs' own authentication — never looked at here;
/// - **public**: `/healthz`, `/readyz`, `/ca.pem`, `/api/v1/openapi.json` — anyone, any listener; the
///   dashboard's files (`/`, `/dashboard/…`: they hold no data, the page asks the admin API for it) on
///   listeners that serve the admin side;
/// - **admin**: everything else — only on listeners that serve it (`listeners[].admin`), and only when
///   the rules below pass.
///
/// ### Rules for the admin side, in order
/// 1. A CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here: 204 for a
///    configured origin, 403 for any other (browsers send no credentials with a preflight).
/// 2. With a token required: `Authorization: Bearer <token>` or HTTP Basic `<username>:<token>`, compared
///    in constant time; else 401 with a challenge for both. Without one (a loopback-only sandbox): the
///    `Host` must be a loopback name, an address literal, a name of one label or a configured name, else
///    403 — a page of another site that rebinds its DNS name to 127.0.0.1 cannot read or change anything.
/// 3. A request that changes state (any method but GET, HEAD, OPTIONS) from a browser page of another
///    origin is refused with 403: an `Origin` other than the request's own or a configured one (`null`
///    included), or, without `Origin`, `Sec-Fetch-Site: cross-site`/`same-site`. Clients that are not
///    browsers send neither and pass.
/// 4. Such a request with a body must say `Content-Type: application/json` (or `…+json`), else 415: the
///    bodies a cross-site form or `text/plain` fetch can send without a preflight are never accepted.
struct AdminAccessPolicy: Sendable {
    /// The outcome for one request.
    enum Decision: Sendable {
        /// Not the admin side: route it as it is.
        case pass
        /// An admin request that may proceed; `corsOrigin` is the configured origin to echo, if any.
        case allow(corsOrigin: String?)
        /// Answer with this instead of routing (a refusal or a preflight answer).
        case answer(HTTPResponse)
    }

    /// Whether a token is needed (resolved from `admin.authentication` and the listeners).
    let requiresToken: Bool
    /// The token (UTF-8) when one is needed.
    let token: [UInt8]
    let username: String
    /// Listener names that serve the admin side.
    let adminListeners: Set<String>
    /// Host names (lower case, no port) besides loopback names and address literals that a sandbox
    /// without a token answers.
    let allowedHosts: Set<String>
    let allowedOrigins: Set<AdminOrigin>

    static let publicPaths: Set<Substring> = ["/healthz", "/readyz", "/ca.pem", "/api/v1/openapi.json"]
    static let corsMethods = "GET, HEAD, POST, PATCH, DELETE"
    static let corsHeaders = "authorization, content-type, last-event-id"

    func decide(_ request: HTTPRequest) -> Decision {
        let path = request.path
        if path.utf8.starts(with: Self.providerPrefix) || path == "/3" || Self.publicPaths.contains(path) { return .pass }
        let servesAdmin = adminListeners.contains(request.connection.listenerName)
        if servesAdmin && Self.isDashboard(path) && !Self.changesState(request.method) { return .pass }
        guard servesAdmin else {
            return .answer(.jsonError(status: 404, code: "not_found", message: "No route for \(path) on this listener"))
        }
        let origin = request.headers["origin"]
        if request.method == "OPTIONS", request.headers.contains("access-control-request-method") {
            return preflight(origin: origin)
        }
        if requiresToken {
            guard isAuthorized(request.headers["authorization"]) else {
                return .answer(unauthorized(offeringBasic: request.headers["sec-fetch-dest"] != "empty"))
            }
        } else if let authority = request.authority, !isAllowedHost(authority) {
            return .answer(.jsonError(
                status: 403, code: "forbidden_host",
                message: "Host \(authority) is not a name of this sandbox (add it to admin.allowedHosts)"))
        }
        let configuredOrigin = origin.flatMap(AdminOrigin.init).flatMap { allowedOrigins.contains($0) ? $0 : nil }
        if Self.changesState(request.method) {
            if let refusal = crossSiteRefusal(request, origin: origin, configured: configuredOrigin != nil) {
                return .answer(refusal)
            }
            if !request.body.isEmpty && !Self.isJSON(request.headers["content-type"]) {
                return .answer(.jsonError(
                    status: 415, code: "unsupported_media_type",
                    message: "Send the body as JSON with Content-Type: application/json"))
            }
        }
        return .allow(corsOrigin: configuredOrigin?.description)
    }

    // MARK: Rules

    private static let providerPrefix = Array("/3/".utf8)
    private static let dashboardPrefix = Array("/dashboard/".utf8)

    static func isDashboard(_ path: Substring) -> Bool { path == "/" || path.utf8.starts(with: dashboardPrefix) }

    static func changesState(_ method: String) -> Bool {
        method != "GET" && method != "HEAD" && method != "OPTIONS"
    }

    private func preflight(origin: String?) -> Decision {
        guard let origin, let parsed = AdminOrigin(origin), allowedOrigins.contains(parsed) else {
            return .answer(.jsonError(
                status: 403, code: "forbidden_origin",
                message: "Cross-origin requests are not allowed from \(origin ?? "this origin") (see admin.allowedOrigins)"))
        }
        var response = HTTPResponse(status: 204)
        response.headers.set("access-control-allow-origin", parsed.description)
        response.headers.set("access-control-allow-methods", Self.corsMethods)
        response.headers.set("access-control-allow-headers", Self.corsHeaders)
        response.headers.set("access-control-max-age", "600")
        response.headers.set("vary", "origin")
        return .answer(response)
    }

    private func crossSiteRefusal(_ request: HTTPRequest, origin: String?, configured: Bool) -> HTTPResponse? {
        if configured { return nil }
        if let origin {
            let own = request.authority.flatMap { AdminOrigin(scheme: request.scheme, authority: $0) }
            if let sent = AdminOrigin(origin), sent == own { return nil }
            return .jsonError(
                status: 403, code: "forbidden_origin",
                message: "Requests that change state are not accepted from pages of another origin (\(origin))")
        }
        if let site = request.headers["sec-fetch-site"]?.lowercased(), site == "cross-site" || site == "same-site" {
            return .jsonError(
                status: 403, code: "forbidden_origin",
                message: "Requests that change state are not accepted from pages of another site")
        }
        return nil
    }

    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }

    /// Loopback names, address literals, names of one label (`apns-sandbox`, a Docker service name: no
    /// site on the internet can be served under one) and configured names.
    func isAllowedHost(_ authority: String) -> Bool {
        guard let (host, _) = HostName.split(authority) else { return false }
        return host == "localhost" || host.hasSuffix(".localhost") || !host.contains(".")
            || HostName.isAddressLiteral(host) || allowedHosts.contains(host)
    }

    private func isAuthorized(_ header: String?) -> Bool {
        guard let header, let space = header.firstIndex(of: " ") else { return false }
        let scheme = header[..<space].lowercased()
        let credentials = header[header.index(after: space)...].trimmingCharacters(in: .whitespaces)
        switch scheme {
        case "bearer":
            return ConstantTime.equals(Array(credentials.utf8), token)
        case "basic":
            guard let decoded = Data(base64Encoded: credentials), let text = String(data: decoded, encoding: .utf8),
                let colon = text.firstIndex(of: ":")
            else { return false }
            let userMatches = ConstantTime.equals(Array(text[..<colon].utf8), Array(username.utf8))
            let tokenMatches = ConstantTime.equals(Array(text[text.index(after: colon)...].utf8), token)
            return userMatches && tokenMatches
        default:
            return false
        }
    }

    /// 401 with a challenge for each scheme. `offeringBasic` false for a page's own fetch (`Sec-Fetch-Dest:
    /// empty`): a Basic challenge would make the browser hold that fetch behind its own password prompt, while
    /// the dashboard asks for the token itself; a browser opening an admin URL still gets the prompt.
    private func unauthorized(offeringBasic: Bool) -> HTTPResponse {
        var response = HTTPResponse.jsonError(
            status: 401, code: "unauthorized",
            message: "The admin API needs the admin token: Authorization: Bearer <token> (docs/security.md)")
        // One challenge per field, Basic first: browsers read one challenge per field and then ask for a
        // user name and password themselves.
        if offeringBasic { response.headers.append("www-authenticate", #"Basic realm="apns-sandbox", charset="UTF-8""#) }
        response.headers.append("www-authenticate", #"Bearer realm="apns-sandbox""#)
        return response
    }
}
