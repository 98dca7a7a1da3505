// APNs Sandbox — the HTTP/1.1 Upgrade to h2c on the cleartext listener (RFC 7540 §3.2), with real clients.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct H2CUpgradeTests {
    static let payload = #"{"aps":{"alert":"Hello"}}"#
    /// curl's own HTTP2-Settings (SETTINGS_MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 33554432, ENABLE_PUSH 0).
    static let validSettings = "AAMAAABkAAQCAAAAAAIAAAAA"

    /// A GET /healthz upgrade offer (`Connection: Upgrade, HTTP2-Settings`, `Upgrade: h2c`) with `settingsLines`.
    static func offer(_ settingsLines: String = "HTTP2-Settings: \(validSettings)\r\n", version: String = "HTTP/1.1",
                      connection: String = "Upgrade, HTTP2-Settings") -> String {
        "GET /healthz \(version)\r\nHost: 127.0.0.1\r\nConnection: \(connection)\r\nUpgrade: h2c\r\n\(settingsLines)\r\n"
    }

    /// The status line of the first response to `request` on a new cleartext connection.
    static func firstStatusLine(port: Int, _ request: String) async throws -> String? {
        let result = try await offload {
            let socket = try RawSocket(port: port)
            try socket.send(request)
            return socket.readResponses(1, timeout: 5)
        }
        return result.responses.first?.statusLine
    }

    /// `curl --http2 http://…/healthz` (an `Upgrade: h2c` offer) is switched to HTTP/2: curl reports version 2.
    @Test func curlGETIsUpgradedToHTTP2() async throws {
        try await withServer { server in
            let output = try await curl([
                "--http2", "-v", "-w", "\n%{http_version} %{http_code}", "\(server.httpBase)/healthz",
            ])
            #expect(output.status == 0, "\(output)")
            #expect(output.stdoutText == "{\"status\":\"ok\"}\n2 200", "\(output)")
            #expect(output.stderrText.contains("HTTP/1.1 101 Switching Protocols"), "\(output.stderrText)")
        }
    }

    /// `curl --http2 -d …` to the provider endpoint: the POST and its body cross the upgrade and the push is
    /// answered over HTTP/2 (stream 1) with 200 and an `apns-id`, with APNs' one stream before authentication.
    @Test func curlPushWithBodyIsUpgradedToHTTP2() async throws {
        try await withServer(configure: { $0.apns.streamsBeforeAuthentication = 1 }) { server in
            let output = try await curl([
                "--http2", "-D", "-", "-w", "%{http_version}", "-X", "POST", "-H", server.authorizationHeader,
                "-H", "apns-topic: \(testTopic)", "-H", "apns-push-type: alert", "-d", Self.payload,
                "\(server.httpBase)/3/device/\(deviceToken)",
            ])
            #expect(output.status == 0, "\(output)")
            let response = try #require(CurlResponse(output.stdout), "\(output)")
            #expect(response.statusLine.hasPrefix("HTTP/2 "), "\(response.statusLine)")
            #expect(response.status == 200, "\(output)")
            #expect(isLowercaseUUID(response.header("apns-id") ?? ""), "\(response.headers)")
            #expect(response.bodyText == "2", "curl reports HTTP/2 and the 200 has no body: \(response.bodyText)")
            #expect(server.server.pushes.counts.accepted == 1)
        }
    }

    /// `nghttp -u` (HTTP Upgrade) gets the GET answered over HTTP/2; with `-d` it upgrades with `OPTIONS *`
    /// and sends the push on the new HTTP/2 connection, which is accepted.
    @Test func nghttpUpgradeServesGETAndPush() async throws {
        try await withServer(configure: { $0.apns.streamsBeforeAuthentication = 1 }) { server in
            let get = try await run("nghttp", args: ["-u", "-v", "-t", "10", "\(server.httpBase)/healthz"])
            #expect(get.status == 0, "\(get)")
            #expect(get.stdoutText.contains("HTTP Upgrade success"), "\(get.stdoutText)")
            #expect(get.stdoutText.contains(":status: 200"), "\(get.stdoutText)")
            #expect(get.stdoutText.contains(#"{"status":"ok"}"#), "\(get.stdoutText)")

            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let payloadFile = directory + "/payload.json"
            _ = FileManager.default.createFile(atPath: payloadFile, contents: Data(Self.payload.utf8))
            let push = try await run("nghttp", args: [
                "-u", "-v", "-t", "10", "-d", payloadFile, "-H", server.authorizationHeader,
                "-H", "apns-topic: \(testTopic)", "\(server.httpBase)/3/device/\(deviceToken)",
            ])
            #expect(push.status == 0, "\(push)")
            #expect(push.stdoutText.contains("HTTP Upgrade success"), "\(push.stdoutText)")
            #expect(push.stdoutText.contains(":status: 200"), "\(push.stdoutText)")
            #expect(server.server.pushes.counts.accepted == 1)
        }
    }

    /// An upgrade request whose body has not fully arrived is not switched yet (RFC 7540 §3.2): the 101 comes
    /// once the whole body is read, and the push is answered on stream 1 over HTTP/2 after the client preface.
    @Test func upgradeWaitsForTheWholeBody() async throws {
        try await withServer { server in
            let body = Array(Self.payload.utf8)
            let head = "POST /3/device/\(deviceToken) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: \(Self.validSettings)\r\n"
                + "\(server.authorizationHeader)\r\napns-topic: \(testTopic)\r\nContent-Length: \(body.count)\r\n\r\n"
            let (early, switched, answer) = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(Array(head.utf8) + body.prefix(10))
                let early = socket.read(timeout: 0.5)
                try socket.send(Array(body.dropFirst(10)))
                let switched = socket.read(timeout: 5) { bytes in
                    let (responses, rest) = HTTP1Response.parseAll(bytes)
                    return responses.first?.status == 101 && HTTP2Frame.parseAll(Array(rest)).contains { $0.type == HTTP2Frame.settings }
                }
                try socket.send(HTTP2Frame.clientPreface)
                let answer = socket.read(timeout: 5) { bytes in
                    HTTP2Frame.parseAll(bytes).contains { $0.streamID == 1 && $0.type == HTTP2Frame.headers }
                }
                return (early, switched, answer)
            }
            #expect(early.bytes.isEmpty, "nothing before the body is complete: \(early.text)")
            let (responses, rest) = HTTP1Response.parseAll(switched.bytes)
            let upgrade = try #require(responses.first, "no response: \(switched.text)")
            #expect(upgrade.statusLine == "HTTP/1.1 101 Switching Protocols")
            #expect(upgrade.header("upgrade") == "h2c")
            #expect(upgrade.header("connection")?.lowercased() == "upgrade")
            let frames = HTTP2Frame.parseAll(Array(rest)) + HTTP2Frame.parseAll(answer.bytes)
            #expect(frames.first?.type == HTTP2Frame.settings, "the server preface follows the 101: \(frames.map(\.type))")
            let response = try #require(frames.first { $0.streamID == 1 && $0.type == HTTP2Frame.headers }, "no answer on stream 1")
            #expect(response.payload.first == 0x88, ":status 200 (HPACK static index 8)")
            #expect(response.flags & HTTP2Frame.flagEndStream != 0, "a 200 push has no DATA frame")
            #expect(server.server.pushes.counts.accepted == 1)
        }
    }

    /// Offers that cannot be taken are answered over HTTP/1.1 as if there were no offer, and the connection
    /// stays HTTP/1.1 (a second request on it is answered too); the same offer with a valid HTTP2-Settings
    /// is switched (101).
    @Test(arguments: [
        ("not base64url", "HTTP2-Settings: AAMAAABk*AAQCAAAAAAIAAAAA\r\n", "HTTP/1.1"),
        ("not a whole number of settings", "HTTP2-Settings: AAMAAABkAA\r\n", "HTTP/1.1"),
        ("an invalid value (ENABLE_PUSH 2)", "HTTP2-Settings: AAIAAAAC\r\n", "HTTP/1.1"),
        ("an invalid value (INITIAL_WINDOW_SIZE 2^31)", "HTTP2-Settings: AASAAAAA\r\n", "HTTP/1.1"),
        ("empty", "HTTP2-Settings: \r\n", "HTTP/1.1"),
        ("two HTTP2-Settings fields", "HTTP2-Settings: \(validSettings)\r\nHTTP2-Settings: \(validSettings)\r\n", "HTTP/1.1"),
        ("no HTTP2-Settings field", "", "HTTP/1.1"),
        ("HTTP/1.0", "HTTP2-Settings: \(validSettings)\r\n", "HTTP/1.0"),
    ])
    func offersThatCannotBeTakenAreAnsweredOverHTTP1(_ name: String, _ settingsLines: String, _ version: String) async throws {
        try await withServer { server in
            let control = try await Self.firstStatusLine(port: server.httpPort, Self.offer())
            #expect(control == "HTTP/1.1 101 Switching Protocols", "a valid offer is taken: \(String(describing: control))")
            let connection = version == "HTTP/1.0" ? "keep-alive, Upgrade, HTTP2-Settings" : "Upgrade, HTTP2-Settings"
            let offer = Self.offer(settingsLines, version: version, connection: connection)
            let result = try await offload {
                let socket = try RawSocket(port: server.httpPort)
                try socket.send(offer + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return socket.readResponses(2, timeout: 5)
            }
            let responses = result.responses
            #expect(responses.count == 2, "\(name): \(result.text)")
            #expect(responses.map(\.status) == [200, 200], "\(name): \(result.text)")
            #expect(responses.first?.statusLine.hasPrefix(version == "HTTP/1.0" ? "HTTP/1." : "HTTP/1.1 200") == true, "\(name)")
            #expect(responses.allSatisfy { $0.bodyText == #"{"status":"ok"}"# }, "\(name): \(result.text)")
        }
    }

    /// `Connection` must name both `Upgrade` and `HTTP2-Settings`; an offer whose `Connection` lacks one, or
    /// whose `Upgrade` does not list `h2c`, is ignored (one that lists it among others is taken).
    @Test func offerWithoutConnectionOptionsIsIgnored() async throws {
        try await withServer { server in
            for (connection, upgrade, expected) in [
                ("Upgrade", "h2c", "HTTP/1.1 200"), ("HTTP2-Settings", "h2c", "HTTP/1.1 200"),
                ("Upgrade, HTTP2-Settings", "websocket", "HTTP/1.1 200"),
                ("upgrade , http2-settings", "websocket, h2c", "HTTP/1.1 101"),
            ] {
                let offer = Self.offer(connection: connection).replacingOccurrences(of: "Upgrade: h2c", with: "Upgrade: \(upgrade)")
                let status = try await Self.firstStatusLine(port: server.httpPort, offer)
                #expect(status?.hasPrefix(expected) == true, "Connection: \(connection), Upgrade: \(upgrade): \(String(describing: status))")
            }
        }
    }

    /// An upgrade offer with a body over `maxBodyBytes` is answered 413 over HTTP/1.1, without switching; one
    /// within it is switched once its body has arrived.
    @Test func oversizedUpgradeBodyIsAnsweredOverHTTP1() async throws {
        try await withServer(configure: { $0.limits.maxBodyBytes = 4096 }) { server in
            func offer(_ length: Int) -> String {
                "POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    + "Upgrade: h2c\r\nHTTP2-Settings: \(Self.validSettings)\r\nContent-Length: \(length)\r\n\r\n"
                    + String(repeating: "a", count: min(length, 4096))
            }
            let fits = try await Self.firstStatusLine(port: server.httpPort, offer(4096))
            #expect(fits == "HTTP/1.1 101 Switching Protocols", "\(String(describing: fits))")
            let result = try await exchangeUntilClose(port: server.httpPort, offer(5000))
            #expect(result.responses.first?.statusLine.hasPrefix("HTTP/1.1 413") == true, "\(result.text)")
        }
    }

    /// Over TLS an `Upgrade: h2c` offer is ignored (RFC 7540 §3.3): HTTP/1.1 answers it, where the cleartext
    /// listener switches.
    @Test func offerOverTLSIsIgnored() async throws {
        try await withServer { server in
            let cleartext = try await Self.firstStatusLine(port: server.httpPort, Self.offer())
            #expect(cleartext == "HTTP/1.1 101 Switching Protocols", "\(String(describing: cleartext))")
            let output = try await curl(server.curlResolve + [
                "--http1.1", "--cacert", server.caPath, "-H", "Connection: Upgrade, HTTP2-Settings", "-H", "Upgrade: h2c",
                "-H", "HTTP2-Settings: \(Self.validSettings)", "-w", "\n%{http_version} %{http_code}", "\(server.tlsBase)/healthz",
            ])
            #expect(output.status == 0, "\(output)")
            #expect(output.stdoutText == "{\"status\":\"ok\"}\n1.1 200", "\(output)")
        }
    }
}
