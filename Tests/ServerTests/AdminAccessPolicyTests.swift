// APNs Sandbox — the admin access rules as a pure value: no sockets.
import Foundation
import HTTP
@testable import Server
import Testing

@Suite struct AdminAccessPolicyTests {
    static let token = "0123456789abcdef0123456789abcdef"

    static func policy(requiresToken: Bool, origins: [String] = [], hosts: [String] = []) -> AdminAccessPolicy {
        AdminAccessPolicy(
            requiresToken: requiresToken, token: Array(token.utf8), username: "admin", adminListeners: ["cleartext"],
            allowedHosts: Set(hosts), allowedOrigins: Set(origins.compactMap(AdminOrigin.init)))
    }

    static func request(
        _ method: String, _ target: String, authority: String? = "127.0.0.1:8080", listener: String = "cleartext",
        headers: [(String, String)] = [], body: String = ""
    ) -> HTTPRequest {
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(name, value) }
        return HTTPRequest(
            method: method, target: target, authority: authority, headers: fields, body: Array(body.utf8),
            connection: ConnectionInfo(id: 1, isTLS: false, listenerName: listener))
    }

    /// The status the policy answers with, 0 for pass and 1 for allow.
    static func status(_ decision: AdminAccessPolicy.Decision) -> Int {
        switch decision {
        case .pass: 0
        case .allow: 1
        case .answer(let response): response.status
        }
    }

    /// The provider endpoint and the public paths pass untouched, whatever the headers.
    @Test func providerAndPublicPathsPass() {
        let policy = Self.policy(requiresToken: true)
        for path in ["/3/device/abcd", "/3", "/healthz", "/readyz", "/ca.pem", "/api/v1/openapi.json"] {
            let decision = policy.decide(Self.request("POST", path, listener: "other", headers: [("origin", "http://evil.test")]))
            #expect(Self.status(decision) == 0, "\(path)")
        }
    }

    /// A listener that does not serve the admin side answers its paths with 404.
    @Test func adminPathsOnAProviderOnlyListenerAre404() {
        let decision = Self.policy(requiresToken: false).decide(Self.request("GET", "/api/v1/devices", listener: "tls"))
        #expect(Self.status(decision) == 404)
    }

    /// With a token required: none, a wrong one, or a wrong scheme is 401; Bearer and Basic admin:token pass.
    @Test func tokenIsRequiredAndComparedExactly() {
        let policy = Self.policy(requiresToken: true)
        let basic = Data("admin:\(Self.token)".utf8).base64EncodedString()
        let wrongUser = Data("root:\(Self.token)".utf8).base64EncodedString()
        let cases: [(String?, Int)] = [
            (nil, 401), ("Bearer", 401), ("Bearer \(Self.token)x", 401), ("Bearer \(Self.token.dropLast())", 401),
            ("Token \(Self.token)", 401), ("Basic \(wrongUser)", 401), ("Basic !!!", 401),
            ("Bearer \(Self.token)", 1), ("bearer  \(Self.token)", 1), ("Basic \(basic)", 1),
        ]
        for (header, expected) in cases {
            let headers = header.map { [("authorization", $0)] } ?? []
            let decision = policy.decide(Self.request("GET", "/api/v1/devices", headers: headers))
            #expect(Self.status(decision) == expected, "\(header ?? "none")")
            if case .answer(let response) = decision {
                let challenges = response.headers.values(for: "www-authenticate")
                #expect(challenges.count == 2 && challenges[0].hasPrefix("Basic ") && challenges[1].hasPrefix("Bearer "))
            }
        }
    }

    /// A page's own fetch (`Sec-Fetch-Dest: empty`, the dashboard's) is offered only the Bearer challenge, so the
    /// browser does not hold it behind its password prompt; a browser opening the URL still gets Basic too. The
    /// dashboard's files are public, as pages, never as a state change; the provider prefix stays the provider's.
    @Test func pagesFetchesGetOnlyTheBearerChallengeAndTheDashboardIsPublic() {
        let policy = Self.policy(requiresToken: true)
        for (dest, challenges) in [("empty", ["Bearer"]), ("document", ["Basic", "Bearer"])] {
            let decision = policy.decide(Self.request("GET", "/api/v1/devices", headers: [("sec-fetch-dest", dest)]))
            guard case .answer(let response) = decision else { Issue.record("\(dest) passed"); continue }
            #expect(response.status == 401)
            #expect(response.headers.values(for: "www-authenticate").map { String($0.prefix { $0 != " " }) } == challenges, "\(dest)")
        }
        #expect(Self.status(policy.decide(Self.request("GET", "/"))) == 0)
        #expect(Self.status(policy.decide(Self.request("GET", "/dashboard/app.js"))) == 0)
        #expect(Self.status(policy.decide(Self.request("POST", "/dashboard/app.js"))) == 401)
        #expect(Self.status(policy.decide(Self.request("GET", "/dashboards"))) == 401)
    }

    /// Without a token (loopback only), only loopback names, address literals and configured names are
    /// answered: a DNS-rebinding page's own host name is refused.
    @Test func hostNamesOfOtherSitesAreRefusedWithoutAToken() {
        let policy = Self.policy(requiresToken: false, hosts: ["sandbox.internal.test"])
        let cases: [(String?, Int)] = [
            ("127.0.0.1:8080", 1), ("localhost:8080", 1), ("LOCALHOST", 1), ("app.localhost:8080", 1), ("[::1]:8080", 1),
            ("10.1.2.3:8080", 1), ("apns-sandbox:8080", 1), ("sandbox", 1), ("sandbox.internal.test", 1), (nil, 1),
            ("evil.example:8080", 403), ("localhost.evil.example", 403), ("127.0.0.1.nip.io:8080", 403),
        ]
        for (authority, expected) in cases {
            let decision = policy.decide(Self.request("GET", "/api/v1/notifications", authority: authority))
            #expect(Self.status(decision) == expected, "\(authority ?? "none")")
        }
        // With a token the host does not matter.
        let withToken = Self.policy(requiresToken: true).decide(Self.request(
            "GET", "/api/v1/notifications", authority: "evil.example", headers: [("authorization", "Bearer \(Self.token)")]))
        #expect(Self.status(withToken) == 1)
    }

    /// A state change from a page of another origin or site is 403; one from the sandbox's own origin or
    /// a client that is not a browser passes; GETs are not refused for their origin.
    @Test func crossSiteStateChangesAreRefused() {
        let policy = Self.policy(requiresToken: false)
        let json = ("content-type", "application/json")
        let cases: [(String, [(String, String)], Int)] = [
            ("POST", [json, ("origin", "http://evil.test")], 403),
            ("PATCH", [json, ("origin", "null")], 403),
            ("DELETE", [("origin", "http://127.0.0.1:9999")], 403),
            ("POST", [json, ("origin", "https://127.0.0.1:8080")], 403),
            ("POST", [json, ("sec-fetch-site", "cross-site")], 403),
            ("POST", [json, ("sec-fetch-site", "same-site")], 403),
            ("POST", [json, ("origin", "http://127.0.0.1:8080")], 1),
            ("POST", [json, ("sec-fetch-site", "same-origin")], 1),
            ("POST", [json], 1),
            ("GET", [("origin", "http://evil.test"), ("sec-fetch-site", "cross-site")], 1),
        ]
        for (method, headers, expected) in cases {
            let decision = policy.decide(Self.request(method, "/api/v1/webhooks", headers: headers, body: "{}"))
            #expect(Self.status(decision) == expected, "\(method) \(headers)")
        }
    }

    /// A body must be JSON: forms and text/plain (what a page can send without a preflight) are 415.
    @Test func bodiesMustBeJSON() {
        let policy = Self.policy(requiresToken: false)
        let cases: [(String?, Int)] = [
            (nil, 415), ("text/plain", 415), ("application/x-www-form-urlencoded", 415), ("multipart/form-data", 415),
            ("application/json", 1), ("Application/JSON; charset=utf-8", 1), ("application/merge-patch+json", 1),
        ]
        for (contentType, expected) in cases {
            let headers = contentType.map { [("content-type", $0)] } ?? []
            let decision = policy.decide(Self.request("POST", "/api/v1/apps", headers: headers, body: "{}"))
            #expect(Self.status(decision) == expected, "\(contentType ?? "none")")
        }
        // No body, no content type needed (DELETE, POST …/test).
        #expect(Self.status(policy.decide(Self.request("DELETE", "/api/v1/notifications?all=true"))) == 1)
    }

    /// CORS is off unless configured: a preflight from any origin is 403; a configured origin gets 204 with
    /// its headers, and its requests get the origin echoed.
    @Test func corsOnlyForConfiguredOrigins() {
        let closed = Self.policy(requiresToken: false)
        let preflight = [("origin", "http://dashboard.test:3000"), ("access-control-request-method", "POST")]
        #expect(Self.status(closed.decide(Self.request("OPTIONS", "/api/v1/apps", headers: preflight))) == 403)

        let open = Self.policy(requiresToken: true, origins: ["http://dashboard.test:3000"])
        guard case .answer(let answer) = open.decide(Self.request("OPTIONS", "/api/v1/apps", headers: preflight)) else {
            Issue.record("no preflight answer")
            return
        }
        #expect(answer.status == 204)
        #expect(answer.headers["access-control-allow-origin"] == "http://dashboard.test:3000")
        #expect(answer.headers["access-control-allow-headers"]?.contains("authorization") == true)
        let call = open.decide(Self.request(
            "POST", "/api/v1/apps", headers: [
                ("origin", "http://DASHBOARD.test:3000"), ("content-type", "application/json"),
                ("authorization", "Bearer \(Self.token)"),
            ], body: "{}"))
        guard case .allow(let corsOrigin) = call else {
            Issue.record("configured origin refused: \(call)")
            return
        }
        #expect(corsOrigin == "http://dashboard.test:3000")
    }

    /// Listener addresses: loopback only or not.
    @Test func loopbackListenerAddresses() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"] {
            #expect(HostName.isLoopbackOnly(host), "\(host)")
        }
        for host in ["::", "0.0.0.0", "192.168.1.5", "10.0.0.1", "::ffff:10.0.0.1", "example.com", "fe80::1"] {
            #expect(!HostName.isLoopbackOnly(host), "\(host)")
        }
    }

    /// Origins compare without case and default ports.
    @Test func originsNormalize() {
        #expect(AdminOrigin("HTTP://Example.COM:80") == AdminOrigin("http://example.com"))
        #expect(AdminOrigin("https://example.com:443") == AdminOrigin("https://example.com"))
        #expect(AdminOrigin("https://example.com:8443") != AdminOrigin("https://example.com"))
        #expect(AdminOrigin("http://[::1]:8080")?.description == "http://[::1]:8080")
        for bad in ["null", "example.com", "ftp://example.com", "http://example.com/path", "http://", "http://a:99999"] {
            #expect(AdminOrigin(bad) == nil, "\(bad)")
        }
    }

    /// The admin section, listeners and the top level reject keys they do not know, naming them.
    @Test func unknownConfigurationKeysAreErrors() throws {
        let cases = [
            (#"{"admin":{"authentcation":"required"}}"#, "admin.authentcation"),
            (#"{"adminn":{}}"#, "adminn"),
            (#"{"listeners":[{"name":"a","host":"::","port":1,"tls":false,"amdin":false}]}"#, "amdin"),
            (#"{"extensions":{"allowedExecutable":[]}}"#, "extensions.allowedExecutable"),
            (#"{"admin":{"authentication":"sometimes"}}"#, "admin.authentication"),
        ]
        let directory = try makeTemporaryDirectory("config")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (text, key) in cases {
            let path = directory + "/sandbox.json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(throws: ConfigurationError.self) { try SandboxConfiguration.load(path: path) }
            do {
                _ = try SandboxConfiguration.load(path: path)
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
        // The shipped file loads and validates.
        let shipped = try SandboxConfiguration.load(path: TestPaths.packageRoot + "/config/sandbox.json")
        try shipped.validate()
        #expect(shipped.listeners.allSatisfy { HostName.isLoopbackOnly($0.host) })
    }
}
