// APNs Sandbox — the responder in front of the router that applies AdminAccessPolicy.
import HTTP

/// Routes requests through ``AdminAccessPolicy``: refused ones are answered here, allowed admin responses
/// get headers that keep browsers from sniffing, framing or caching them (and CORS for configured origins).
/// The provider endpoint's requests pass with one prefix comparison.
struct AdminGuard: HTTPResponder {
    let policy: AdminAccessPolicy
    let next: any HTTPResponder

    func respond(to request: HTTPRequest) -> HandlerResult {
        switch policy.decide(request) {
        case .pass:
            return next.respond(to: request)
        case .answer(let response):
            return .response(Self.hardened(response, corsOrigin: nil))
        case .allow(let corsOrigin):
            switch next.respond(to: request) {
            case .response(let response):
                return .response(Self.hardened(response, corsOrigin: corsOrigin))
            case .deferred(let start):
                return .deferred { respond in
                    start { response in respond(Self.hardened(response, corsOrigin: corsOrigin)) }
                }
            case .stream(let head, let start):
                return .stream(Self.hardened(head, corsOrigin: corsOrigin), start)
            case .blocking(let work):
                return .blocking { Self.hardened(try work(), corsOrigin: corsOrigin) }
            }
        }
    }

    static func hardened(_ response: HTTPResponse, corsOrigin: String?) -> HTTPResponse {
        var response = response
        response.headers.set("x-content-type-options", "nosniff")
        response.headers.set("x-frame-options", "DENY")
        if response.headers["cache-control"] == nil { response.headers.set("cache-control", "no-store") }
        if let corsOrigin {
            response.headers.set("access-control-allow-origin", corsOrigin)
            response.headers.append("vary", "origin")
        }
        return response
    }
}
