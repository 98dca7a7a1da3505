// APNs Sandbox — `POST /api/v1/provider-tokens/validate`: a token explained, agreeing with the provider endpoint.
import Foundation
import Testing

// A hang detector: the cases wait for one of the six provider-server slots (see `withProviderServer`).
@Suite(.scaledTimeLimit(minutes: 2))
struct ProviderTokenValidationRouteTests {
    private func validate(_ server: ProviderServer, _ body: [String: Any]) async throws -> (status: Int, json: [String: Any]) {
        let data = try JSONSerialization.data(withJSONObject: body)
        let (status, json) = try await apiRequest(
            "POST", "\(server.test.httpBase)/api/v1/provider-tokens/validate", String(decoding: data, as: UTF8.self))
        return (status, json ?? [:])
    }

    /// For each cause: the endpoint's verdict (status, reason, cause) is what a real push with the token gets
    /// (its answer, and its cause in the push log), word for word. The sandbox clock stands still, so a time in a
    /// cause (how old, how far ahead) is the same for the verdict and the push, whenever each is answered.
    @Test func agreesWithTheProviderEndpoint() async throws {
        try await withProviderServer(configure: { $0.clock.virtual = true; $0.clock.frozen = true }) { server in
            let keyFile = server.test.dataDirectory + "/AuthKey_\(testKeyID).p8"
            let otherKey = server.keyDirectory + "/AuthKey_\(Fixture.secondTeamKeyID).p8"
            let now = try await server.clockSeconds()
            let header = #"{"alg":"ES256","kid":"\#(testKeyID)"}"#
            let claims = #"{"iss":"\#(testTeamID)","iat":\#(now)}"#
            let cases: [(name: String, token: String, topic: String)] = [
                ("valid", try server.token(issuedAt: now), testTopic),
                ("string iat", try signedJWT(header: header, claims: #"{"iss":"\#(testTeamID)","iat":"\#(now)"}"#, keyFile: keyFile), testTopic),
                ("non-integer string iat", try signedJWT(header: header, claims: #"{"iss":"\#(testTeamID)","iat":"1e9"}"#, keyFile: keyFile), testTopic),
                ("signature", try signedJWT(header: header, claims: claims, keyFile: otherKey), testTopic),
                ("unknown kid", try signedJWT(header: #"{"alg":"ES256","kid":"NOSUCHKEY1"}"#, claims: claims, keyFile: keyFile), testTopic),
                ("iss differs", try signedJWT(header: header, claims: #"{"iss":"\#(Fixture.otherTeamID)","iat":\#(now)}"#, keyFile: keyFile), testTopic),
                ("alg", try signedJWT(header: #"{"alg":"HS256","kid":"\#(testKeyID)"}"#, claims: claims, keyFile: keyFile), testTopic),
                ("not a JWT", "not.a-jwt", testTopic),
                ("expired", try server.token(issuedAt: now - 3 * 3600), testTopic),
                ("future", try server.token(issuedAt: now + 600), testTopic),
                ("another team's app", try server.token(issuedAt: now), Fixture.otherTeamTopic),
                ("scoped key", try server.token(Fixture.scopedKeyID, issuedAt: now), Fixture.secondTopic),
                ("production key", try server.token(Fixture.productionKeyID, issuedAt: now), testTopic),
            ]
            // The causes that name a time, exactly (the clock stands still).
            let timed = ["expired": "issued 3 h ago (max 60 min)", "future": "issued 10 min in the future (max 60 s)"]
            for item in cases {
                let (status, verdict) = try await validate(server, ["token": item.token, "topic": item.topic])
                #expect(status == 200, "\(item.name): \(verdict)")
                let spec = PushSpec.push(authorization: item.token, topic: item.topic)
                let reply = try await server.push(spec, over: .h2c)
                let answer = jsonObject(reply.body)
                #expect(verdict["status"] as? Int == reply.status, "\(item.name): \(verdict) vs \(reply)")
                #expect(verdict["valid"] as? Bool == (reply.status == 200), "\(item.name)")
                if reply.status == 200 {
                    #expect(verdict["reason"] is NSNull && verdict["cause"] is NSNull, "\(item.name): \(verdict)")
                    continue
                }
                #expect(verdict["reason"] as? String == answer?["reason"] as? String, "\(item.name): \(verdict) vs \(reply)")
                let logged = try await server.logEntry(apnsID: spec.expectedEcho ?? "")?["cause"] as? String
                let cause = verdict["cause"] as? String ?? ""
                #expect(!cause.isEmpty, "\(item.name): \(verdict)")
                #expect(logged == cause, "\(item.name): \(cause) vs \(logged ?? "nil")")
                if let expected = timed[item.name] { #expect(cause == expected, "\(item.name)") }
            }
        }
    }

    /// A valid token is explained in full: header and claims as decoded, its key, its age, the signature.
    @Test func explainsAValidToken() async throws {
        try await withProviderServer(configure: { $0.clock.virtual = true; $0.clock.frozen = true }) { server in
            let now = try await server.clockSeconds()
            let token = try server.token(Fixture.scopedKeyID, issuedAt: now - 120)
            let (status, verdict) = try await validate(server, ["token": "bearer " + token, "topic": testTopic, "environment": "production"])
            #expect(status == 200)
            #expect(verdict["valid"] as? Bool == true && verdict["status"] as? Int == 200, "\(verdict)")
            #expect((verdict["header"] as? [String: Any])?["kid"] as? String == Fixture.scopedKeyID)
            #expect((verdict["claims"] as? [String: Any])?["iss"] as? String == testTeamID)
            let key = try #require(verdict["key"] as? [String: Any])
            #expect(key["found"] as? Bool == true && key["teamId"] as? String == testTeamID, "\(key)")
            #expect(key["scope"] as? String == "topics" && key["topics"] as? [String] == [testTopic], "\(key)")
            #expect(key["environment"] as? String == "both")
            #expect(verdict["issuedAt"] as? Int == Int(now - 120))
            // The sandbox clock stands still: the age is exact.
            #expect(verdict["ageSeconds"] as? Int == 120, "\(verdict)")
            #expect(verdict["maxAgeSeconds"] as? Int == 3600 && verdict["allowedSkewSeconds"] as? Int == 60)
            #expect(verdict["signatureValid"] as? Bool == true)
            #expect(verdict["environment"] as? String == "production" && verdict["topic"] as? String == testTopic)
            // Nothing was sent: the push log is empty.
            #expect(try await server.pushLog().pushes.isEmpty)
        }
    }

    /// A refused token still shows what could be read: the claims of a bad iat, the key of an unknown kid, a signature
    /// that does not verify.
    @Test func explainsARefusedToken() async throws {
        try await withProviderServer { server in
            let keyFile = server.test.dataDirectory + "/AuthKey_\(testKeyID).p8"
            let badIat = try signedJWT(header: #"{"alg":"ES256","kid":"\#(testKeyID)"}"#, claims: #"{"iss":"\#(testTeamID)","iat":"soon"}"#, keyFile: keyFile)
            let (_, first) = try await validate(server, ["token": badIat])
            #expect(first["valid"] as? Bool == false && first["status"] as? Int == 403 && first["reason"] as? String == "InvalidProviderToken")
            #expect(first["cause"] as? String == #"iat is a string that is not a plain integer ("soon")"#)
            #expect((first["claims"] as? [String: Any])?["iat"] as? String == "soon")
            #expect((first["key"] as? [String: Any])?["found"] as? Bool == true, "\(first)")
            #expect(first["issuedAt"] is NSNull && first["signatureValid"] is NSNull, "\(first)")
            #expect(first["topic"] is NSNull && first["environment"] as? String == "development")

            let unknown = try signedJWT(header: #"{"alg":"ES256","kid":"NOSUCHKEY1"}"#, claims: #"{"iss":"\#(testTeamID)","iat":\#(ProviderServer.now)}"#, keyFile: keyFile)
            let (_, second) = try await validate(server, ["token": unknown])
            #expect((second["key"] as? [String: Any])?["found"] as? Bool == false, "\(second)")
            #expect((second["key"] as? [String: Any])?["keyId"] as? String == "NOSUCHKEY1")
            #expect(second["signatureValid"] is NSNull)

            let forged = try signedJWT(
                header: #"{"alg":"ES256","kid":"\#(testKeyID)"}"#, claims: #"{"iss":"\#(testTeamID)","iat":\#(ProviderServer.now)}"#,
                keyFile: server.keyDirectory + "/AuthKey_\(Fixture.secondTeamKeyID).p8")
            let (_, third) = try await validate(server, ["token": forged])
            #expect(third["signatureValid"] as? Bool == false && third["cause"] as? String == "signature does not verify with key \(testKeyID)")
            #expect(third["ageSeconds"] as? Int != nil)

            let (_, garbage) = try await validate(server, ["token": "%%%"])
            #expect(garbage["header"] is NSNull && garbage["claims"] is NSNull && garbage["key"] is NSNull, "\(garbage)")
        }
    }

    /// Extreme issue times: `ageSeconds` is the sandbox time minus `iat` when that fits in 64 bits (an `iat` of 0, of
    /// 19 digits), else `null` (an `iat` of -2⁶³, whose age would wrap round) — the verdict is a refusal either way.
    @Test func ageOfAnExtremeIssueTime() async throws {
        try await withProviderServer(configure: { $0.clock.virtual = true; $0.clock.frozen = true }) { server in
            let keyFile = server.test.dataDirectory + "/AuthKey_\(testKeyID).p8"
            let now = try await server.clockSeconds()
            let cases: [(iat: String, age: Int64?, reason: String, cause: String)] = [
                ("0", now, "ExpiredProviderToken", "issued \(now / 86400) days ago (max 60 min)"),
                (#""9223372036854775807""#, now - Int64.max, "InvalidProviderToken",
                 "issued \((Int64.max - now) / 86400) days in the future (max 60 s)"),
                ("9223372036854775807", now - Int64.max, "InvalidProviderToken",
                 "issued \((Int64.max - now) / 86400) days in the future (max 60 s)"),
                ("-9223372036854775808", nil, "ExpiredProviderToken", "issued at -9223372036854775808, far too long ago"),
            ]
            for item in cases {
                let token = try signedJWT(
                    header: #"{"alg":"ES256","kid":"\#(testKeyID)"}"#, claims: #"{"iss":"\#(testTeamID)","iat":\#(item.iat)}"#,
                    keyFile: keyFile)
                let (status, verdict) = try await validate(server, ["token": token])
                #expect(status == 200, "\(item.iat): \(verdict)")
                #expect(verdict["valid"] as? Bool == false && verdict["reason"] as? String == item.reason, "\(item.iat): \(verdict)")
                #expect(verdict["cause"] as? String == item.cause, "\(item.iat): \(verdict)")
                #expect(verdict["signatureValid"] as? Bool == true, "\(item.iat): \(verdict)")
                if let age = item.age {
                    #expect((verdict["ageSeconds"] as? NSNumber)?.int64Value == age, "\(item.iat): \(verdict)")
                } else {
                    #expect(verdict["ageSeconds"] is NSNull, "\(item.iat): \(verdict)")
                }
            }
        }
    }

    /// Bad requests: not JSON, no token, an unknown field (named), a bad environment.
    @Test func refusesBadRequests() async throws {
        try await withProviderServer { server in
            let url = "\(server.test.httpBase)/api/v1/provider-tokens/validate"
            let cases: [(body: String, status: Int, code: String, says: String)] = [
                ("{", 400, "invalid_json", "not valid JSON"),
                ("{}", 400, "missing_field", "token"),
                (#"{"token":"x","topik":"com.example.app"}"#, 400, "unknown_field", "topik"),
                (#"{"token":7}"#, 400, "invalid_field", "token"),
                (#"{"token":"x","environment":"staging"}"#, 422, "invalid_environment", "development or production"),
            ]
            for item in cases {
                let (status, json) = try await apiRequest("POST", url, item.body)
                let error = json?["error"] as? [String: Any]
                #expect(status == item.status && error?["code"] as? String == item.code, "\(item.body) → \(status) \(json ?? [:])")
                #expect((error?["message"] as? String ?? "").contains(item.says), "\(item.body) → \(json ?? [:])")
            }
        }
    }
}
