// APNs Sandbox — why a provider token or certificate was refused: the push log's `cause`, the debug log line,
// the `push.rejected` event, while APNs' answer stays exactly Apple's.
import APNsProtocol
import Crypto
import Events
import Foundation
import Sandbox
import Support
import TestProcessSupport
import Testing

/// A JWT of these header and claims texts, signed with the `.p8` at `keyFile` (a provider's own tokens can
/// say anything; the sandbox signs only well-formed ones).
func signedJWT(header: String, claims: String, keyFile: String) throws -> String {
    let key = try ES256PrivateKey(pem: try String(contentsOfFile: keyFile, encoding: .utf8))
    let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
    return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
}

// A hang detector: the cases wait for one of the six provider-server slots (see `withProviderServer`).
@Suite(.scaledTimeLimit(minutes: 2))
struct ProviderRefusalCauseTests {
    /// One push with a bad token or topic: its answer, and what the push log says why.
    struct Case {
        var name: String
        var authorization: String
        var topic = testTopic
        var outcome: PushOutcome
        /// The push log's `cause`: this, or (`whole` false) this and more.
        var cause: String
        var whole = true
    }

    /// Every kind of token refusal over h2c: Apple's answer (exact body), and in the push log the same reason
    /// with its cause. The sandbox clock stands still, so how old or how far ahead a token is is exact.
    @Test func everyTokenRefusalCarriesItsCause() async throws {
        try await withProviderServer(configure: { $0.clock.virtual = true; $0.clock.frozen = true }) { server in
            let keyFile = server.test.dataDirectory + "/AuthKey_\(testKeyID).p8"
            let now = try await server.clockSeconds()
            func jwt(header: String = #"{"alg":"ES256","kid":"\#(testKeyID)"}"#, claims: String) throws -> String {
                try signedJWT(header: header, claims: claims, keyFile: keyFile)
            }
            let otherKey = server.keyDirectory + "/AuthKey_\(Fixture.secondTeamKeyID).p8"
            let cases: [Case] = [
                Case(name: "string iat, not an integer", authorization: try jwt(claims: #"{"iss":"\#(testTeamID)","iat":"12.5"}"#),
                     outcome: .rejected(403, "InvalidProviderToken"), cause: #"iat is a string that is not a plain integer ("12.5")"#),
                Case(name: "null iat", authorization: try jwt(claims: #"{"iss":"\#(testTeamID)","iat":null}"#),
                     outcome: .rejected(403, "InvalidProviderToken"), cause: "iat is null, not a number"),
                Case(name: "signature of another key",
                     authorization: try signedJWT(header: #"{"alg":"ES256","kid":"\#(testKeyID)"}"#,
                                                  claims: #"{"iss":"\#(testTeamID)","iat":\#(now)}"#, keyFile: otherKey),
                     outcome: .rejected(403, "InvalidProviderToken"), cause: "signature does not verify with key \(testKeyID)"),
                Case(name: "unknown kid", authorization: try jwt(header: #"{"alg":"ES256","kid":"NOSUCHKEY1"}"#,
                                                                 claims: #"{"iss":"\#(testTeamID)","iat":\#(now)}"#),
                     outcome: .rejected(403, "InvalidProviderToken"), cause: #"kid "NOSUCHKEY1" unknown for team \#(testTeamID) (its keys: "#,
                     whole: false),
                Case(name: "iss of another team", authorization: try jwt(claims: #"{"iss":"\#(Fixture.otherTeamID)","iat":\#(now)}"#),
                     outcome: .rejected(403, "InvalidProviderToken"),
                     cause: #"team of the key \#(testKeyID) (\#(testTeamID)) differs from iss ("\#(Fixture.otherTeamID)")"#),
                Case(name: "alg HS256", authorization: try jwt(header: #"{"alg":"HS256","kid":"\#(testKeyID)"}"#,
                                                               claims: #"{"iss":"\#(testTeamID)","iat":\#(now)}"#),
                     outcome: .rejected(403, "InvalidProviderToken"), cause: #"alg is "HS256", not ES256"#),
                Case(name: "not a JWT", authorization: "garbage", outcome: .rejected(403, "InvalidProviderToken"),
                     cause: "not three base64url parts (header.claims.signature)"),
                Case(name: "issued 3 h ago", authorization: try server.token(issuedAt: now - 3 * 3600),
                     outcome: .rejected(403, "ExpiredProviderToken"), cause: "issued 3 h ago (max 60 min)"),
                Case(name: "issued 10 min ahead", authorization: try server.token(issuedAt: now + 600),
                     outcome: .rejected(403, "InvalidProviderToken"), cause: "issued 10 min in the future (max 60 s)"),
                Case(name: "topic of another team", authorization: try server.token(issuedAt: now), topic: Fixture.otherTeamTopic,
                     outcome: .rejected(400, "TopicDisallowed"),
                     cause: #"token for another team than the topic's app: "\#(Fixture.otherTeamTopic)" is team \#(Fixture.otherTeamID)'s, key \#(testKeyID) is team \#(testTeamID)'s"#),
                Case(name: "topic outside a scoped key", authorization: try server.token(Fixture.scopedKeyID, issuedAt: now), topic: Fixture.secondTopic,
                     outcome: .rejected(400, "TopicDisallowed"),
                     cause: #"key \#(Fixture.scopedKeyID) may sign only for \#(testTopic), not "\#(Fixture.secondTopic)""#),
                Case(name: "production key in development", authorization: try server.token(Fixture.productionKeyID, issuedAt: now),
                     outcome: .rejected(403, "BadEnvironmentKeyIdInToken"),
                     cause: "key \(Fixture.productionKeyID) is for production only; the push is for development"),
            ]
            var sent: [(Case, PushSpec)] = []
            for item in cases {
                let spec = PushSpec.push(authorization: item.authorization, topic: item.topic)
                let reply = try await server.push(spec, over: .h2c)
                expectReply(reply, item.outcome, for: spec, transport: .h2c)
                #expect(!String(decoding: reply.body, as: UTF8.self).contains("cause"), "\(item.name): the answer is Apple's")
                sent.append((item, spec))
            }
            let log = try await server.pushLog()
            for (item, spec) in sent {
                let entry = log.pushes.first { $0["apnsId"] as? String == spec.expectedEcho }
                let cause = entry?["cause"] as? String ?? ""
                #expect(item.whole ? cause == item.cause : cause.hasPrefix(item.cause), "\(item.name): \(cause)")
                if case .rejected(_, let reason, _) = item.outcome { #expect(entry?["reason"] as? String == reason, "\(item.name)") }
            }
        }
    }

    /// A topic or bundle ID in a cause is client text: quoted, escaped and cut at 32 characters, in the push log
    /// and in the validate route's verdict — for a token push (a scoped key's topic) and a certificate push (a topic
    /// the certificate does not name).
    @Test func clientTextInACauseIsQuotedEscapedAndCut() async throws {
        try await withProviderServer { server in
            // No white space (that is BadTopic), but quotes and backslashes, and longer than 32 characters.
            let topic = #"com.example.say"hi"to\C:\the-whole-wide-world"#
            let shown = #""com.example.say\"hi\"to\\C:\\the-who…""#
            let token = try server.token(Fixture.scopedKeyID)
            let scoped = PushSpec.push(authorization: token, topic: topic)
            expectReply(try await server.push(scoped, over: .h2c), .rejected(400, "TopicDisallowed"), for: scoped, transport: .h2c)
            let expected = "key \(Fixture.scopedKeyID) may sign only for \(testTopic), not \(shown)"
            #expect(try await server.logEntry(apnsID: scoped.expectedEcho ?? "")?["cause"] as? String == expected)
            let body = try JSONSerialization.data(withJSONObject: ["token": token, "topic": topic])
            let verdict = try await apiRequest(
                "POST", "\(server.test.httpBase)/api/v1/provider-tokens/validate", String(decoding: body, as: UTF8.self))
            #expect(verdict.json?["cause"] as? String == expected, "\(verdict.json ?? [:])")

            let certificate = try server.clientCertificate(topics: [testTopic, Fixture.secondTopic])
            let outside = PushSpec.push(authorization: nil, topic: topic)
            let refused = try await server.push(outside, over: .h2TLS, curlArguments: certificate.curlArguments)
            expectReply(refused, .rejected(400, "TopicDisallowed"), for: outside, transport: .h2TLS)
            #expect(try await server.logEntry(apnsID: outside.expectedEcho ?? "")?["cause"] as? String
                    == #"topic \#(shown) is not one of the client certificate's ("\#(testTopic)", "\#(Fixture.secondTopic)")"#)
        }
    }

    /// A string of digits is a valid `iat` over the wire too; an accepted push has no cause in the log.
    @Test func stringIssueTimeIsAccepted() async throws {
        try await withProviderServer { server in
            let token = try signedJWT(
                header: #"{"alg":"ES256","kid":"\#(testKeyID)"}"#, claims: #"{"iss":"\#(testTeamID)","iat":"\#(ProviderServer.now)"}"#,
                keyFile: server.test.dataDirectory + "/AuthKey_\(testKeyID).p8")
            let spec = PushSpec.push(authorization: token)
            let reply = try await server.push(spec, over: .h2TLS)
            expectReply(reply, .accepted, for: spec, transport: .h2TLS)
            let entry = try #require(try await server.logEntry(apnsID: spec.expectedEcho ?? ""))
            #expect(entry["status"] as? Int == 200)
            #expect(entry["cause"] == nil)
            #expect(entry["authentication"] as? String == "token:\(testTeamID)/\(testKeyID)")
        }
    }

    /// Certificates: one not issued by the sandbox CA, one expired on the sandbox clock, one for the other environment.
    @Test func certificateRefusalsCarryTheirCause() async throws {
        try await withProviderServer(configure: { $0.clock.virtual = true }) { server in
            let foreign = try await server.foreignCertificate()
            let spec = PushSpec.push(authorization: nil)
            let reply = try await server.push(spec, over: .h2TLS, curlArguments: foreign.curlArguments)
            expectReply(reply, .rejected(403, "BadCertificate"), for: spec, transport: .h2TLS)
            let entry = try await server.logEntry(apnsID: spec.expectedEcho ?? "")
            #expect(entry?["cause"] as? String == "client certificate not issued by the sandbox CA")

            let production = try server.clientCertificate(environment: .production)
            let wrongEnvironment = PushSpec.push(authorization: nil)
            let refused = try await server.push(wrongEnvironment, over: .h2TLS, curlArguments: production.curlArguments)
            expectReply(refused, .rejected(403, "BadCertificateEnvironment"), for: wrongEnvironment, transport: .h2TLS)
            #expect(try await server.logEntry(apnsID: wrongEnvironment.expectedEcho ?? "")?["cause"] as? String
                    == "client certificate is for production only; the push is for development")

            let certificate = try server.clientCertificate()
            let advanced = try await apiRequest(
                "POST", "\(server.test.httpBase)/api/v1/clock/advance", #"{"seconds":\#(400 * 86400)}"#)
            #expect(advanced.status == 200)
            let late = PushSpec.push(authorization: nil)
            let expired = try await server.push(late, over: .h2TLS, curlArguments: certificate.curlArguments)
            expectReply(expired, .rejected(403, "BadCertificate"), for: late, transport: .h2TLS)
            let cause = try await server.logEntry(apnsID: late.expectedEcho ?? "")?["cause"] as? String ?? ""
            #expect(cause.hasPrefix("client certificate expired at "), "\(cause)")
        }
    }

    /// The debug line of a refused push names the cause (and never the token).
    @Test func debugLogLineNamesTheCause() async throws {
        try await withServer(logLevel: .debug) { server in
            let token = try signedJWT(
                header: #"{"alg":"ES256","kid":"NOSUCHKEY1"}"#, claims: #"{"iss":"\#(testTeamID)","iat":\#(ProviderServer.now)}"#,
                keyFile: server.dataDirectory + "/AuthKey_\(testKeyID).p8")
            let output = try await curl([
                "--http2-prior-knowledge", "-s", "-X", "POST", "\(server.httpBase)/3/device/\(deviceToken)",
                "-H", "authorization: bearer \(token)", "-H", "apns-topic: \(testTopic)", "-d", alertPayload,
            ])
            #expect(output.stdoutText == #"{"reason":"InvalidProviderToken"}"#)
            let lines = server.logSink.capturedLines.filter { $0.contains("apns.cause") }
            #expect(lines.count == 1, "\(server.logSink.capturedLines)")
            #expect(lines.first?.contains("NOSUCHKEY1") == true && lines.first?.contains("unknown") == true, "\(lines)")
            #expect(lines.first?.contains(token) == false)
        }
    }

    /// The `push.rejected` event (kept in the event log) carries the cause; a rejection without one leaves it out.
    @Test func rejectedEventCarriesTheCause() throws {
        var push = PushRecord(
            apnsID: "a", deviceToken: deviceToken, environment: .development, headers: [], payload: [],
            authentication: .none, connectionID: 1, receivedAt: 1)
        push.rejection = APNsError(.invalidProviderToken, cause: "kid \"K\" unknown")
        let data = try #require(EventRecorder.rejected(push)?.data)
        let event = try #require(jsonObject(data))
        #expect(event["reason"] as? String == "InvalidProviderToken")
        #expect(event["cause"] as? String == "kid \"K\" unknown")
        push.rejection = APNsError(.badDeviceToken)
        let plainData = try #require(EventRecorder.rejected(push)?.data)
        let plain = try #require(jsonObject(plainData))
        #expect(plain["cause"] == nil)
    }
}
