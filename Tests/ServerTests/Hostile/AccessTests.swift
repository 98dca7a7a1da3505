// APNs Sandbox — hostile peers against the admin side: no credentials, other sites, new programs, secrets.
import APNsProtocol
import Foundation
import Server
import Testing
import Webhooks

/// Issue #11 items 1 and 2, tried as an attacker would, each asserting that the request was refused and
/// that nothing ran or changed (proof files are not created).
@Suite struct HostileAccessTests {
    /// One request with curl; `contentType` nil sends none (curl's form default removed).
    static func http(
        _ method: String, _ url: String, headers: [String] = [], body: String? = nil,
        contentType: String? = "application/json"
    ) async throws -> CurlResponse {
        var args = ["-i", "-X", method, url]
        for header in headers { args += ["-H", header] }
        if let body {
            args += ["--data-binary", body, "-H", "content-type:" + (contentType.map { " " + $0 } ?? "")]
        }
        let output = try await curl(args)
        guard let response = CurlResponse(output.stdout) else { throw ProcessError("no HTTP answer: \(output)") }
        return response
    }

    /// A push with mutable-content to `device`; returns the final record (waits for it).
    static func pushAndWait(_ server: TestServer, device: String, headers: [String] = []) async throws -> [String: Any] {
        let apnsID = try await pushAlert(
            server, device: device, body: #"{"aps":{"alert":{"title":"T","body":"B"},"mutable-content":1}}"#)
        try #require(!apnsID.isEmpty, "push refused")
        let record = try await http("GET", "\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=10", headers: headers)
        return jsonObject(record.body) ?? [:]
    }

    /// An exec extension script that appends a line to `proof` each time it runs (and shows nothing).
    static func proofScript(in directory: String, proof: String) throws -> String {
        let script = directory + "/extension.sh"
        try "#!/bin/sh\necho ran >> '\(proof)'\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return script
    }

    static func runs(_ proof: String) -> Int {
        ((try? String(contentsOfFile: proof, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// On every interface the admin side needs the token: without it nothing is read, changed or run;
    /// with it (Bearer or Basic) everything works; the public endpoints and the provider need none.
    @Test func exposedListenerRequiresTheAdminToken() async throws {
        let scratch = try makeTemporaryDirectory("hostile")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let proof = scratch + "/proof"
        try await withServer(configure: { configuration in
            for index in configuration.listeners.indices { configuration.listeners[index].host = "0.0.0.0" }
        }) { server in
            let base = server.httpBase
            let tokenFile = server.dataDirectory + "/admin-token"
            let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(token.count == 64)
            let mode = try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            let read = try await Self.http("GET", base + "/api/v1/devices")
            #expect(read.status == 401)
            #expect(read.headers.filter { $0.name == "www-authenticate" }.map(\.value).contains { $0.hasPrefix("Bearer") })
            #expect(read.header("www-authenticate")?.hasPrefix("Basic ") == true)
            #expect(!read.bodyText.contains("deadbeef") && !read.bodyText.contains("devices\":["))
            let exec = #"{"serviceExtension":{"kind":"exec","path":"/bin/sh","arguments":["-c","echo ran >> \#(proof)"]}}"#
            let change = try await Self.http("PATCH", base + "/api/v1/apps/com.example.app", body: exec)
            #expect(change.status == 401)
            let wrongToken = token.dropLast() + (token.hasSuffix("0") ? "1" : "0")
            let wrong = try await Self.http("GET", base + "/api/v1/devices", headers: ["authorization: Bearer \(wrongToken)"])
            #expect(wrong.status == 401)
            let minted = try await Self.http("POST", base + "/api/v1/apps/com.example.app/client-certificates", body: "{}")
            #expect(minted.status == 401 && !minted.bodyText.contains("PRIVATE KEY"))
            let webhook = try await Self.http("POST", base + "/api/v1/webhooks", body: #"{"url":"http://127.0.0.1:9/steal"}"#)
            #expect(webhook.status == 401)

            // The provider endpoint keeps APNs' own authentication; the push shows its content directly.
            let record = try await Self.pushAndWait(server, device: deviceToken, headers: ["authorization: Bearer \(token)"])
            #expect(record["outcome"] as? String == "direct", "\(record)")
            #expect(Self.runs(proof) == 0)

            let bearer = try await Self.http("GET", base + "/api/v1/devices", headers: ["authorization: Bearer \(token)"])
            #expect(bearer.status == 200)
            let basic = Data("admin:\(token)".utf8).base64EncodedString()
            let viaBasic = try await Self.http("GET", base + "/api/v1/apps", headers: ["authorization: Basic \(basic)"])
            #expect(viaBasic.status == 200)
            let issued = try await Self.http(
                "POST", base + "/api/v1/apps/com.example.app/client-certificates", headers: ["authorization: Bearer \(token)"],
                body: "{}")
            #expect(issued.status == 201 && issued.bodyText.contains("PRIVATE KEY"))
            #expect(issued.header("cache-control") == "no-store")

            for path in ["/healthz", "/ca.pem", "/api/v1/openapi.json"] {
                #expect(try await Self.http("GET", base + path).status == 200, "\(path)")
            }
            #expect(!server.logSink.capturedLines.joined().contains(token), "the token is in the log")
        }
    }

    /// The API can only select programs the operator allowed: any other path — directly, through `..`
    /// or a symbolic link out of an allowed directory — and any environment are refused, and nothing runs.
    @Test func apiCannotNameANewProgram() async throws {
        let scratch = try makeTemporaryDirectory("hostile")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let allowed = scratch + "/allowed"
        try FileManager.default.createDirectory(atPath: allowed, withIntermediateDirectories: true)
        let proof = scratch + "/proof"
        let script = try Self.proofScript(in: allowed, proof: proof)
        try FileManager.default.createSymbolicLink(atPath: allowed + "/sh", withDestinationPath: "/bin/sh")
        try await withServer(configure: { $0.extensions.allowedExecutables = [allowed + "/"] }) { server in
            let url = "\(server.httpBase)/api/v1/apps/\(testTopic)"
            let refused = [
                #"{"kind":"exec","path":"/bin/sh","arguments":["-c","echo ran >> \#(proof)"]}"#,
                #"{"kind":"exec","path":"sh","arguments":["-c","echo ran >> \#(proof)"]}"#,
                #"{"kind":"exec","path":"\#(allowed)/../../../bin/sh","arguments":["-c","echo ran >> \#(proof)"]}"#,
                #"{"kind":"exec","path":"\#(allowed)/sh","arguments":["-c","echo ran >> \#(proof)"]}"#,
                #"{"kind":"exec","path":"\#(script)","environment":{"LD_PRELOAD":"\#(scratch)/evil.so"}}"#,
            ]
            for body in refused {
                let answer = try await Self.http("PATCH", url, body: #"{"serviceExtension":\#(body)}"#)
                #expect(answer.status == 403, "\(body): \(answer.status) \(answer.bodyText)")
                #expect(errorCode(answer.body) == "exec_not_allowed")
                let created = try await Self.http(
                    "POST", "\(server.httpBase)/api/v1/apps",
                    body: #"{"bundleId":"com.evil.app","teamId":"\#(testTeamID)","serviceExtension":\#(body)}"#)
                #expect(created.status == 403, "\(body)")
            }
            let record = try await Self.pushAndWait(server, device: deviceToken)
            #expect(record["outcome"] as? String == "direct", "\(record)")
            #expect(Self.runs(proof) == 0)

            // The allowed program may be selected, and it runs.
            let selected = try await Self.http("PATCH", url, body: #"{"serviceExtension":{"kind":"exec","path":"\#(script)"}}"#)
            #expect(selected.status == 200, "\(selected.bodyText)")
            _ = try await Self.pushAndWait(server, device: deviceToken)
            #expect(Self.runs(proof) == 1)
        }
    }

    /// An exec extension stored earlier (allowed then) does not run once the configuration no longer
    /// allows it: the original is shown, with the reason in the timeline.
    @Test func storedExtensionOutsideTheAllowListDoesNotRun() async throws {
        let scratch = try makeTemporaryDirectory("hostile")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let data = scratch + "/data"
        let proof = scratch + "/proof"
        let script = try Self.proofScript(in: scratch, proof: proof)
        try await withServer(configure: {
            $0.dataDirectory = data
            $0.extensions.allowedExecutables = [script]
        }) { server in
            let selected = try await Self.http(
                "PATCH", "\(server.httpBase)/api/v1/apps/\(testTopic)",
                body: #"{"serviceExtension":{"kind":"exec","path":"\#(script)"}}"#)
            #expect(selected.status == 200)
        }
        try await withServer(configure: { $0.dataDirectory = data }) { server in
            let record = try await Self.pushAndWait(server, device: deviceToken)
            #expect(record["outcome"] as? String == "original-error", "\(record)")
            let details = (record["timeline"] as? [[String: Any]] ?? []).compactMap { $0["detail"] as? String }
            #expect(details.contains { $0.contains("is not allowed") }, "\(details)")
            #expect((record["displayed"] as? [String: Any])?["title"] as? String == "T")
        }
        #expect(Self.runs(proof) == 0)
    }

    /// The configuration file's own exec extensions run, also one named by a bare name on its own `PATH`.
    @Test func configuredExtensionWithItsOwnPathRuns() async throws {
        let scratch = try makeTemporaryDirectory("hostile")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let proof = scratch + "/proof"
        let bin = scratch + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = try Self.proofScript(in: scratch, proof: proof)
        try FileManager.default.moveItem(atPath: script, toPath: bin + "/my-extension")
        let extensionJSON = try JSON.parse(#"{"kind":"exec","path":"my-extension","environment":{"PATH":"\#(bin):/usr/bin:/bin"}}"#)
        try await withServer(configure: {
            $0.apps = [AppConfiguration(bundleID: testTopic, teamID: testTeamID, serviceExtension: extensionJSON)]
        }) { server in
            _ = try await Self.pushAndWait(server, device: deviceToken)
            #expect(Self.runs(proof) == 1)
        }
    }

    /// A web page of another site cannot change anything (form and text/plain bodies, foreign or null
    /// `Origin`, `Sec-Fetch-Site`), cannot preflight its way in, and cannot read by rebinding its name.
    @Test func browsersCannotDriveItCrossSite() async throws {
        try await withServer { server in
            let base = server.httpBase
            let hook = #"{"url":"http://127.0.0.1:9/steal"}"#
            let attempts: [([String], String?, Int)] = [
                (["origin: http://evil.example"], "text/plain", 403),
                (["origin: http://evil.example"], "application/json", 403),
                (["origin: null"], "application/json", 403),
                (["origin: http://127.0.0.1:1"], "application/json", 403),
                (["sec-fetch-site: cross-site"], "application/json", 403),
                ([], "text/plain", 415),
                ([], "application/x-www-form-urlencoded", 415),
                ([], nil, 415),
            ]
            for (headers, contentType, status) in attempts {
                let answer = try await Self.http("POST", base + "/api/v1/webhooks", headers: headers, body: hook, contentType: contentType)
                #expect(answer.status == status, "\(headers) \(contentType ?? "-"): \(answer.bodyText)")
                #expect(answer.header("access-control-allow-origin") == nil)
            }
            let preflight = try await Self.http(
                "OPTIONS", base + "/api/v1/webhooks",
                headers: ["origin: http://evil.example", "access-control-request-method: POST",
                          "access-control-request-headers: content-type"])
            #expect(preflight.status == 403 && preflight.header("access-control-allow-origin") == nil)
            let listed = try await Self.http("GET", base + "/api/v1/webhooks")
            #expect((jsonObject(listed.body)?["webhooks"] as? [Any])?.isEmpty == true, "\(listed.bodyText)")

            // DNS rebinding: the page's own name, resolved to 127.0.0.1, is not a name of the sandbox.
            let rebound = try await Self.http("GET", base + "/api/v1/notifications", headers: ["host: rebind.evil.example:\(server.httpPort)"])
            #expect(rebound.status == 403 && errorCode(rebound.body) == "forbidden_host")
            let local = try await Self.http("GET", base + "/api/v1/notifications", headers: ["host: localhost:\(server.httpPort)"])
            #expect(local.status == 200)
            #expect(local.header("x-content-type-options") == "nosniff")

            // The sandbox's own origin (its own pages) may change state.
            let own = try await Self.http("POST", base + "/api/v1/webhooks", headers: ["origin: \(base)"], body: hook)
            #expect(own.status == 201, "\(own.bodyText)")
        }
    }

    /// A configured origin gets CORS: its preflight is answered and its requests carry the origin back.
    @Test func configuredOriginGetsCORS() async throws {
        try await withServer(configure: { $0.admin.allowedOrigins = ["http://dashboard.test:3000"] }) { server in
            let url = server.httpBase + "/api/v1/webhooks"
            let preflight = try await Self.http(
                "OPTIONS", url, headers: ["origin: http://dashboard.test:3000", "access-control-request-method: POST"])
            #expect(preflight.status == 204)
            #expect(preflight.header("access-control-allow-origin") == "http://dashboard.test:3000")
            let created = try await Self.http(
                "POST", url, headers: ["origin: http://dashboard.test:3000"], body: #"{"url":"http://127.0.0.1:9/ok"}"#)
            #expect(created.status == 201)
            #expect(created.header("access-control-allow-origin") == "http://dashboard.test:3000")
        }
    }

    /// Webhook secrets are shown when created or rotated, never by a GET; after a rotation deliveries are
    /// signed with the new secret (verified by the Standard Webhooks reference library).
    @Test func secretsAreWriteOnly() async throws {
        try await withServer { server in
            let base = server.httpBase
            let secret = WebhookSignature.generateSecret()
            let receiver = try await WebhookReceiver(secret: secret)
            let created = try await Self.http(
                "POST", base + "/api/v1/webhooks", body: #"{"url":"\#(receiver.url)","events":["push.accepted"]}"#)
            #expect(created.status == 201)
            let id = try #require(jsonObject(created.body)?["id"] as? String)
            let first = try #require(jsonObject(created.body)?["secret"] as? String)
            #expect(first.hasPrefix("whsec_"))

            let rotated = try await Self.http("POST", base + "/api/v1/webhooks/\(id)/rotate-secret", body: #"{"secret":"\#(secret)"}"#)
            #expect(rotated.status == 200 && jsonObject(rotated.body)?["secret"] as? String == secret)
            _ = try await Self.http("POST", base + "/api/v1/webhooks/\(id)/test")
            let requests = try await receiver.waitFor { $0.contains { $0.type == "webhook.test" } }
            #expect(requests.first { $0.type == "webhook.test" }?.valid == true, "\(requests)")

            for path in ["/api/v1/webhooks", "/api/v1/webhooks/\(id)", "/api/v1/webhooks/\(id)/deliveries"] {
                let shown = try await Self.http("GET", base + path)
                #expect(shown.status == 200)
                #expect(!shown.bodyText.contains("whsec_"), "\(path) shows a secret")
            }
            let generated = try await Self.http("POST", base + "/api/v1/webhooks/\(id)/rotate-secret")
            let newSecret = jsonObject(generated.body)?["secret"] as? String
            #expect(newSecret?.hasPrefix("whsec_") == true && newSecret != secret)
            let missing = try await Self.http("POST", base + "/api/v1/webhooks/wh_nothing/rotate-secret")
            #expect(missing.status == 404)
        }
    }

    /// A listener with `"admin": false` serves APNs and health only.
    @Test func providerOnlyListenerHasNoAdminSide() async throws {
        try await withServer(configure: { configuration in
            configuration.listeners = [
                .init(name: "tls", host: "127.0.0.1", port: 0, tls: true),
                .init(name: "cleartext", host: "127.0.0.1", port: 0, tls: false, admin: false),
            ]
        }) { server in
            let listed = try await Self.http("GET", server.httpBase + "/api/v1/devices")
            #expect(listed.status == 404)
            #expect(try await Self.http("GET", server.httpBase + "/healthz").status == 200)
            #expect(!(try await pushAlert(server)).isEmpty)
            let overTLS = try await curl(server.curlResolve + ["--cacert", server.caPath, "-o", "/dev/null", "-w", "%{http_code}",
                                                                server.tlsBase + "/api/v1/devices"])
            #expect(overTLS.stdoutText == "200")
        }
    }
}

/// Issue #11 item 9: header bytes that are not UTF-8.
@Suite struct HostileHeaderBytesTests {
    /// An `apns-collapse-id` with bytes that are not UTF-8 is 400 BadCollapseId (with an apns-id), not a
    /// stored id with U+FFFD in it.
    @Test func collapseIDThatIsNotUTF8IsRefused() async throws {
        try await withServer { server in
            let body = #"{"aps":{"alert":"hi"}}"#
            var request = Array("""
                POST /3/device/\(deviceToken) HTTP/1.1\r
                Host: localhost\r
                authorization: bearer \(server.providerToken)\r
                apns-topic: \(testTopic)\r
                content-length: \(body.utf8.count)\r
                connection: close\r
                apns-collapse-id: a
                """.utf8)
            request += [0xFF, 0xFE, 0x62] + Array("\r\n\r\n\(body)".utf8)
            let result = try await exchangeUntilClose(port: server.httpPort, request)
            let response = try #require(HTTP1Response.parseAll(result.bytes).responses.first, "\(result)")
            #expect(response.status == 400)
            #expect(response.bodyText == #"{"reason":"BadCollapseId"}"#)
            #expect(response.header("apns-id") != nil)
            let stored = try await curl([server.httpBase + "/api/v1/notifications?device=\(deviceToken)"])
            #expect((jsonObject(stored.stdout)?["notifications"] as? [Any])?.isEmpty == true, "\(stored)")
        }
    }
}
