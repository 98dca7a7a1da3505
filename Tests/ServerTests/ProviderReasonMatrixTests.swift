// APNs Sandbox — every reason the provider endpoint can answer, end to end over h2c, h2 over TLS
// and HTTP/1.1: status, exact JSON body, apns-id, apns-unique-id, timestamp.
import APNsProtocol
import Crypto
import Foundation
import Server
import TestProcessSupport
import Testing

/// One row of the reason matrix: how to configure the server, what to send, what must come back.
struct ReasonCase: Sendable, CustomTestStringConvertible {
    var name: String
    var configure: @Sendable (inout SandboxConfiguration) -> Void = { _ in }
    /// Runs after the server started, before the push (e.g. uninstalls an app).
    var prepare: @Sendable (ProviderServer) throws -> Void = { _ in }
    var request: @Sendable (ProviderServer) throws -> PushSpec
    var outcome: PushOutcome

    var testDescription: String { "\(name) → \(outcome)" }
}

extension ReasonCase {
    static let developmentDevice = Fixture.token("d1")
    static let productionDevice = Fixture.token("e1")
    static let uninstallTime: Int64 = 1_454_096_879_000

    /// A push with the test team's valid token and the usual headers.
    static func valid(
        _ name: String, outcome: PushOutcome, token: String = deviceToken, topic: String? = testTopic,
        extra: [(String, String)] = [], body: String? = alertPayload, host: PushHost = .local,
        apnsID: String? = UUID().uuidString, configure: @escaping @Sendable (inout SandboxConfiguration) -> Void = { _ in }
    ) -> ReasonCase {
        ReasonCase(name: name, configure: configure, request: { server in
            .push(token: token, authorization: try server.token(), topic: topic, extra: extra, body: body, host: host, apnsID: apnsID)
        }, outcome: outcome)
    }

    /// A push whose `authorization` is `bearer <make(server)>` (or absent when it returns nil).
    static func auth(
        _ name: String, outcome: PushOutcome, host: PushHost = .local, topic: String = testTopic,
        configure: @escaping @Sendable (inout SandboxConfiguration) -> Void = { _ in },
        _ make: @escaping @Sendable (ProviderServer) throws -> String?
    ) -> ReasonCase {
        ReasonCase(name: name, configure: configure, request: { server in
            .push(authorization: try make(server), topic: topic, host: host)
        }, outcome: outcome)
    }

    /// A JWT with the given JOSE header and claims and an arbitrary 64-byte signature.
    static func unsignedJWT(header: String, claims: String) -> String {
        func encode(_ bytes: [UInt8]) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return encode(Array(header.utf8)) + "." + encode(Array(claims.utf8)) + "." + encode((0..<64).map { UInt8($0) })
    }

    static let all: [ReasonCase] = [
        // 405, 404
        ReasonCase(name: "GET /3/device/<token>", request: { _ in
            PushSpec(method: "GET", headers: [("apns-id", UUID().uuidString)], body: nil)
        }, outcome: .rejected(405, "MethodNotAllowed")),
        ReasonCase(name: "PUT /3/device/<token>", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.method = "PUT"
            return spec
        }, outcome: .rejected(405, "MethodNotAllowed")),
        ReasonCase(name: "POST /3/devices/x", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.path = "/3/devices/x"
            return spec
        }, outcome: .rejected(404, "BadPath")),
        ReasonCase(name: "POST /3/device/<token>/extra", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.path = "/3/device/\(deviceToken)/extra"
            return spec
        }, outcome: .rejected(404, "BadPath")),

        ReasonCase(name: "POST /3", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.path = "/3"
            return spec
        }, outcome: .rejected(404, "BadPath")),

        // 400: the path and the device token
        ReasonCase(name: "POST /3/device/", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.path = "/3/device/"
            return spec
        }, outcome: .rejected(400, "MissingDeviceToken")),
        ReasonCase(name: "POST /3/device", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.path = "/3/device"
            return spec
        }, outcome: .rejected(400, "MissingDeviceToken")),
        valid("token of 15 bytes", outcome: .rejected(400, "BadDeviceToken"), token: String(repeating: "ab", count: 15)),
        valid("non-hex token", outcome: .rejected(400, "BadDeviceToken"), token: String(repeating: "zz", count: 32)),
        valid("odd-length token", outcome: .rejected(400, "BadDeviceToken"), token: "a" + String(repeating: "ab", count: 32)),
        valid("development device addressed as production", outcome: .rejected(400, "BadDeviceToken"),
              token: developmentDevice, host: .production, configure: {
                  $0.devices = [DeviceConfiguration(token: developmentDevice, environment: .development, apps: [testTopic])]
              }),
        valid("production device addressed as development", outcome: .rejected(400, "BadDeviceToken"),
              token: productionDevice, host: .sandbox, configure: {
                  $0.devices = [DeviceConfiguration(token: productionDevice, environment: .production, apps: [testTopic])]
              }),
        valid("unknown token in strict mode", outcome: .rejected(400, "BadDeviceToken"), configure: {
            $0.apns.unknownDeviceTokens = .strict
        }),

        // 400: headers
        valid("apns-topic twice", outcome: .rejected(400, "DuplicateHeaders"), extra: [("apns-topic", testTopic)]),
        valid("apns-id twice", outcome: .rejected(400, "DuplicateHeaders"), extra: [("apns-id", UUID().uuidString)]),
        ReasonCase(name: "authorization twice", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.headers.append(("authorization", "bearer \(try server.token())"))
            return spec
        }, outcome: .rejected(400, "DuplicateHeaders")),
        valid("apns-id not a UUID", outcome: .rejected(400, "BadMessageId"), apnsID: "not-a-uuid"),
        valid("empty apns-id", outcome: .rejected(400, "BadMessageId"), apnsID: ""),
        valid("apns-id without dashes", outcome: .rejected(400, "BadMessageId"),
              apnsID: UUID().uuidString.replacingOccurrences(of: "-", with: "")),
        valid("apns-push-type banner", outcome: .rejected(400, "InvalidPushType"), extra: [("apns-push-type", "banner")]),
        valid("apns-priority 7", outcome: .rejected(400, "BadPriority"), extra: [("apns-priority", "7")]),
        valid("background with priority 10", outcome: .rejected(400, "BadPriority"),
              extra: [("apns-push-type", "background"), ("apns-priority", "10")], body: #"{"aps":{"content-available":1}}"#),
        valid("apns-expiration tomorrow", outcome: .rejected(400, "BadExpirationDate"), extra: [("apns-expiration", "tomorrow")]),
        valid("apns-expiration -1", outcome: .rejected(400, "BadExpirationDate"), extra: [("apns-expiration", "-1")]),
        valid("apns-collapse-id of 65 bytes", outcome: .rejected(400, "BadCollapseId"),
              extra: [("apns-collapse-id", String(repeating: "c", count: 65))]),
        valid("liveactivity with priority 1", outcome: .rejected(400, "BadPriority"), topic: testTopic + ".push-type.liveactivity",
              extra: [("apns-push-type", "liveactivity"), ("apns-priority", "1")]),
        valid("voip to a topic without .voip", outcome: .rejected(400, "BadTopic"), extra: [("apns-push-type", "voip")]),
        valid("alert to a .voip topic", outcome: .rejected(400, "BadTopic"), topic: testTopic + ".voip",
              extra: [("apns-push-type", "alert")]),
        valid("empty apns-topic", outcome: .rejected(400, "BadTopic"), topic: ""),
        valid("apns-topic with a space", outcome: .rejected(400, "BadTopic"), topic: "com.example app"),
        valid("token auth without apns-topic", outcome: .rejected(400, "MissingTopic"), topic: nil),

        // 400: payload
        valid("empty body", outcome: .rejected(400, "PayloadEmpty"), body: ""),
        valid("body not JSON", outcome: .rejected(400, "BadPayload"), body: "hello"),
        valid("body without aps", outcome: .rejected(400, "BadPayload"), body: #"{"alert":"Hello"}"#),

        // 400: topics and devices
        auth("topic-scoped key for another topic of its team", outcome: .rejected(400, "TopicDisallowed"),
             topic: Fixture.secondTopic) { try $0.token(Fixture.scopedKeyID) },
        auth("an app of another team", outcome: .rejected(400, "TopicDisallowed"), topic: Fixture.otherTeamTopic) {
            try $0.token()
        },
        valid("unconfigured app with autoRegisterApps off", outcome: .rejected(400, "TopicDisallowed"),
              topic: "com.example.unconfigured", configure: { $0.apns.autoRegisterApps = false }),
        valid("configured device without the app", outcome: .rejected(400, "DeviceTokenNotForTopic"),
              token: developmentDevice, configure: {
                  $0.devices = [DeviceConfiguration(token: developmentDevice, apps: [Fixture.secondTopic])]
              }),

        // 403: provider tokens
        auth("no authorization", outcome: .rejected(403, "MissingProviderToken")) { _ in nil },
        ReasonCase(name: "empty authorization", request: { _ in
            var spec = PushSpec.push(authorization: nil)
            spec.headers.append(("authorization", ""))
            return spec
        }, outcome: .rejected(403, "MissingProviderToken")),
        ReasonCase(name: "bearer without a token", request: { _ in
            var spec = PushSpec.push(authorization: nil)
            spec.headers.append(("authorization", "bearer"))
            return spec
        }, outcome: .rejected(403, "MissingProviderToken")),
        auth("signature of another key", outcome: .rejected(403, "InvalidProviderToken")) { _ in
            try ProviderTokenSignerHelper.token(keyID: testKeyID, teamID: testTeamID)
        },
        auth("unknown kid", outcome: .rejected(403, "InvalidProviderToken")) { _ in
            try ProviderTokenSignerHelper.token(keyID: "UNKNOWNKEY", teamID: testTeamID)
        },
        auth("iss not the key's team", outcome: .rejected(403, "InvalidProviderToken")) { server in
            try ProviderTokenSignerHelper.token(keyID: testKeyID, teamID: Fixture.otherTeamID, keyFile: server.keyFile(testKeyID))
        },
        auth("alg HS256", outcome: .rejected(403, "InvalidProviderToken")) { _ in
            unsignedJWT(header: #"{"alg":"HS256","kid":"\#(testKeyID)"}"#, claims: #"{"iss":"\#(testTeamID)","iat":\#(ProviderServer.now)}"#)
        },
        auth("garbage", outcome: .rejected(403, "InvalidProviderToken")) { _ in "garbage" },
        ReasonCase(name: "basic scheme", request: { server in
            var spec = PushSpec.push(authorization: nil)
            spec.headers.append(("authorization", "basic \(try server.token())"))
            return spec
        }, outcome: .rejected(403, "InvalidProviderToken")),
        auth("iat an hour and a second ago", outcome: .rejected(403, "ExpiredProviderToken")) {
            try $0.token(issuedAt: ProviderServer.now - 3601)
        },
        auth("iat an hour ahead", outcome: .rejected(403, "InvalidProviderToken")) {
            try $0.token(issuedAt: ProviderServer.now + 3600)
        },
        auth("development key against production", outcome: .rejected(403, "BadEnvironmentKeyIdInToken"), host: .production) {
            try $0.token(Fixture.developmentKeyID)
        },
        auth("production key against development", outcome: .rejected(403, "BadEnvironmentKeyIdInToken"), host: .sandbox) {
            try $0.token(Fixture.productionKeyID)
        },
        auth("development key against production, live spelling", outcome: .rejected(403, "BadEnvironmentKeyInToken"),
             host: .production, configure: { $0.apns.environmentKeyReason = .badEnvironmentKeyInToken }) {
            try $0.token(Fixture.developmentKeyID)
        },

        // 410
        ReasonCase(name: "uninstalled app", configure: {
            $0.devices = [DeviceConfiguration(token: developmentDevice, apps: [testTopic])]
        }, prepare: { server in
            let token = try #require(DeviceToken(hex: developmentDevice))
            #expect(server.registry.uninstall(bundleID: testTopic, from: token, at: uninstallTime))
        }, request: { server in
            .push(token: developmentDevice, authorization: try server.token())
        }, outcome: .rejected(410, "Unregistered", timestamp: uninstallTime)),

        // 413
        valid("alert of 4097 bytes", outcome: .rejected(413, "PayloadTooLarge"),
              extra: [("apns-push-type", "alert")], body: payload(ofSize: 4097)),
        valid("no push type, 4097 bytes", outcome: .rejected(413, "PayloadTooLarge"), body: payload(ofSize: 4097)),
        valid("voip of 5121 bytes", outcome: .rejected(413, "PayloadTooLarge"), topic: testTopic + ".voip",
              extra: [("apns-push-type", "voip")], body: payload(ofSize: 5121)),

        // 200
        valid("minimal alert", outcome: .accepted, apnsID: nil),
        ReasonCase(name: "path with a query", request: { server in
            var spec = PushSpec.push(authorization: try server.token())
            spec.path += "?utm=1"
            return spec
        }, outcome: .accepted),
        valid("alert with an upper-case apns-id", outcome: .accepted),
        valid("alert of 4096 bytes", outcome: .accepted, extra: [("apns-push-type", "alert")], body: payload(ofSize: 4096)),
        valid("background with priority 5", outcome: .accepted,
              extra: [("apns-push-type", "background"), ("apns-priority", "5")], body: #"{"aps":{"content-available":1}}"#),
        valid("background without priority", outcome: .accepted,
              extra: [("apns-push-type", "background")], body: #"{"aps":{"content-available":1}}"#),
        valid("voip to .voip", outcome: .accepted, topic: testTopic + ".voip", extra: [("apns-push-type", "voip")]),
        valid("voip of 5000 bytes", outcome: .accepted, topic: testTopic + ".voip",
              extra: [("apns-push-type", "voip")], body: payload(ofSize: 5000)),
        valid("voip of 5120 bytes", outcome: .accepted, topic: testTopic + ".voip",
              extra: [("apns-push-type", "voip")], body: payload(ofSize: 5120)),
        valid("liveactivity to .push-type.liveactivity", outcome: .accepted, topic: testTopic + ".push-type.liveactivity",
              extra: [("apns-push-type", "liveactivity")], body: #"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#),
        valid("apns-collapse-id of 64 bytes, expiration 0, priority 1", outcome: .accepted,
              extra: [("apns-collapse-id", String(repeating: "c", count: 64)), ("apns-expiration", "0"), ("apns-priority", "1")]),
        valid("production device on api.push.apple.com", outcome: .accepted, token: productionDevice, host: .production,
              configure: {
                  $0.devices = [DeviceConfiguration(token: productionDevice, environment: .production, apps: [testTopic])]
              }),
        valid("configured development device on api.sandbox.push.apple.com", outcome: .accepted,
              token: developmentDevice, host: .sandbox, configure: {
                  $0.devices = [DeviceConfiguration(token: developmentDevice, apps: [testTopic])]
              }),
        valid("complication to .complication", outcome: .accepted, topic: testTopic + ".complication",
              extra: [("apns-push-type", "complication")]),
        valid("pushtotalk to .voip-ptt", outcome: .accepted, topic: testTopic + ".voip-ptt",
              extra: [("apns-push-type", "pushtotalk")]),
        valid("widgets to .push-type.widgets", outcome: .accepted, topic: testTopic + ".push-type.widgets",
              extra: [("apns-push-type", "widgets")], body: #"{"aps":{"content-changed":true}}"#),
        valid("controls to .push-type.controls", outcome: .accepted, topic: testTopic + ".push-type.controls",
              extra: [("apns-push-type", "controls")]),
        valid("fileprovider to .pushkit.fileprovider", outcome: .accepted, topic: testTopic + ".pushkit.fileprovider",
              extra: [("apns-push-type", "fileprovider")]),
        valid("location to .location-query", outcome: .accepted, topic: testTopic + ".location-query",
              extra: [("apns-push-type", "location")]),
        valid("strict mode, configured device", outcome: .accepted, token: developmentDevice, configure: {
            $0.apns.unknownDeviceTokens = .strict
            $0.devices = [DeviceConfiguration(token: developmentDevice, apps: [testTopic])]
        }),
        auth("topic-scoped key for its topic", outcome: .accepted) { try $0.token(Fixture.scopedKeyID) },
        auth("development key against development", outcome: .accepted) { try $0.token(Fixture.developmentKeyID) },
        auth("production key against production", outcome: .accepted, host: .production) {
            try $0.token(Fixture.productionKeyID)
        },
        auth("second team's key for its own app", outcome: .accepted, topic: Fixture.otherTeamTopic) {
            try $0.token(Fixture.otherTeamKeyID)
        },
    ]
}

/// Tokens signed with keys the server does not trust for the claimed key ID.
enum ProviderTokenSignerHelper {
    /// A token claiming `keyID`/`teamID`, signed with a fresh key (or the `.p8` at `keyFile`).
    static func token(keyID: String, teamID: String, keyFile: String? = nil) throws -> String {
        let key: ES256PrivateKey
        if let keyFile {
            key = try ES256PrivateKey(pem: String(contentsOfFile: keyFile, encoding: .utf8))
        } else {
            key = try ES256PrivateKey.generate()
        }
        return try ProviderTokenSigner.makeToken(keyID: keyID, teamID: teamID, issuedAt: ProviderServer.now, key: key)
    }
}

extension ProviderServer {
    /// The `.p8` of a configured key.
    func keyFile(_ keyID: String) throws -> String {
        for team in test.configuration.teams {
            if let file = team.keys.first(where: { $0.keyID == keyID })?.privateKeyFile { return file }
        }
        throw ProcessError("no key \(keyID)")
    }
}

// The ~240 cases of `reasonIsAnsweredExactly` each wait for a server slot behind every other provider test
// (`.bulk`): the limit is a hang detector over that wait (all provider-server work took 95 s in one CI run
// of the full suite, on 72c9dd5).
@Suite(.scaledTimeLimit(minutes: 5))
struct ProviderReasonMatrixTests {
    /// Each case gets exactly its status, `{"reason":…}` body, echoed apns-id and apns-unique-id on every transport.
    @Test(arguments: ReasonCase.all, ProviderTransport.allCases)
    func reasonIsAnsweredExactly(_ row: ReasonCase, _ transport: ProviderTransport) async throws {
        try await withProviderServer(queue: .bulk, configure: row.configure) { server in
            try row.prepare(server)
            let spec = try row.request(server)
            let reply = try await server.push(spec, over: transport)
            expectReply(reply, row.outcome, for: spec, transport: transport)
        }
    }

    /// A payload over `limits.maxBodyBytes` still gets APNs' 413 `{"reason":"PayloadTooLarge"}` with an apns-id.
    @Test(arguments: ProviderTransport.allCases)
    func payloadOverTheBodyLimitIsPayloadTooLarge(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.limits.maxBodyBytes = 8192 }) { server in
            let spec = PushSpec.push(authorization: server.test.providerToken, body: payload(ofSize: 10_000))
            expectReply(try await server.push(spec, over: transport), .rejected(413, "PayloadTooLarge"), for: spec, transport: transport)
        }
    }

    /// A listener configured for production makes pushes to its address production pushes (no apns-unique-id, production keys).
    @Test(arguments: ProviderTransport.allCases)
    func listenerEnvironmentSelectsProduction(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { configuration in
            for index in configuration.listeners.indices { configuration.listeners[index].environment = .production }
        }) { server in
            let production = PushSpec.push(authorization: try server.token(Fixture.productionKeyID))
            expectReply(try await server.push(production, over: transport), .accepted, for: production,
                        transport: transport, environment: .production)
            let development = PushSpec.push(authorization: try server.token(Fixture.developmentKeyID))
            expectReply(try await server.push(development, over: transport), .rejected(403, "BadEnvironmentKeyIdInToken"),
                        for: development, transport: transport, environment: .production)
            // Apple's sandbox host name still selects development.
            let sandbox = PushSpec.push(
                token: Fixture.token("5b"), authorization: try server.token(Fixture.developmentKeyID), host: .sandbox)
            expectReply(try await server.push(sandbox, over: transport), .accepted, for: sandbox, transport: transport)
        }
    }

    /// `apns.defaultEnvironment = "production"` makes pushes to a plain address production pushes.
    @Test(arguments: ProviderTransport.allCases)
    func defaultEnvironmentSetting(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.apns.defaultEnvironment = .production }) { server in
            let spec = PushSpec.push(authorization: try server.token(Fixture.developmentKeyID))
            expectReply(try await server.push(spec, over: transport), .rejected(403, "BadEnvironmentKeyIdInToken"),
                        for: spec, transport: transport, environment: .production)
        }
    }

    /// After ExpiredProviderToken, a fresh token on the same connection is accepted at once (no TooManyProviderTokenUpdates).
    @Test(arguments: ProviderTransport.allCases)
    func freshTokenAfterExpiredTokenIsAccepted(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let specs = [
                PushSpec.push(authorization: try server.token(issuedAt: ProviderServer.now - 4000)),
                PushSpec.push(authorization: try server.token()),
            ]
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            expectReply(replies[0], .rejected(403, "ExpiredProviderToken"), for: specs[0])
            expectReply(replies[1], .accepted, for: specs[1])
        }
    }

    /// A second team's token on a connection bound to team A by a first push gets 403 Forbidden.
    @Test(arguments: ProviderTransport.allCases)
    func secondTeamOnOneConnectionIsForbidden(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.apns.tokenUpdateMinimumIntervalSeconds = 0 }) { server in
            let specs = [
                PushSpec.push(authorization: try server.token()),
                PushSpec.push(authorization: try server.token(Fixture.otherTeamKeyID), topic: Fixture.otherTeamTopic),
            ]
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .rejected(403, "Forbidden"), for: specs[1])
            // The same team B push on a fresh connection is fine.
            let fresh = PushSpec.push(
                token: Fixture.token("b0"), authorization: try server.token(Fixture.otherTeamKeyID), topic: Fixture.otherTeamTopic)
            expectReply(try await server.push(fresh, over: transport), .accepted, for: fresh)
        }
    }

    /// A topic-scoped key after a team key on one connection gets 403 UnrelatedKeyIdInToken.
    @Test(arguments: ProviderTransport.allCases)
    func scopedKeyAfterTeamKeyIsUnrelated(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: { $0.apns.tokenUpdateMinimumIntervalSeconds = 0 }) { server in
            let specs = [
                PushSpec.push(authorization: try server.token()),
                PushSpec.push(authorization: try server.token(Fixture.scopedKeyID)),
                // Another team-scoped key of the same team is related (the interval is 0).
                PushSpec.push(authorization: try server.token(Fixture.secondTeamKeyID)),
                // A key scoped to one environment is not related to a key valid in both.
                PushSpec.push(authorization: try server.token(Fixture.developmentKeyID)),
            ]
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .rejected(403, "UnrelatedKeyIdInToken"), for: specs[1])
            expectReply(replies[2], .accepted, for: specs[2])
            expectReply(replies[3], .rejected(403, "UnrelatedKeyIdInToken"), for: specs[3])
        }
    }

    /// A new token within `tokenUpdateMinimumIntervalSeconds` (60 s) on one connection gets 429, even 59 s after the
    /// first; the old one still works. The interval is sandbox time (the clock's monotonic time): the clock stands
    /// still and is advanced between the pushes, so how long the machine takes to send them does not matter.
    @Test(arguments: ProviderTransport.allCases)
    func tokenChangeWithinTheIntervalIsTooManyUpdates(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: {
            $0.apns.tokenUpdateMinimumIntervalSeconds = 60
            $0.clock = ClockSettings(virtual: true, frozen: true)
        }) { server in
            let now = try await server.clockSeconds()
            let tokenA = try server.token(issuedAt: now - 10)
            let tokenB = try server.token(issuedAt: now - 5)
            let specs = [
                PushSpec.push(authorization: tokenA), PushSpec.push(authorization: tokenB), PushSpec.push(authorization: tokenA),
            ]
            let replies = try await server.pushOnOneConnection(specs, over: transport) { index in
                if index == 1 { try await server.advanceClock(milliseconds: 59_000) }
            }
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .rejected(429, "TooManyProviderTokenUpdates"), for: specs[1])
            expectReply(replies[2], .accepted, for: specs[2])
        }
    }

    /// A new token once the interval (60 s of sandbox time) has passed since the first is accepted on the same
    /// connection. The clock stands still and is advanced by 60 s between the pushes: no wall-clock spacing to race.
    @Test(arguments: ProviderTransport.allCases)
    func tokenChangeAfterTheIntervalIsAccepted(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: {
            $0.apns.tokenUpdateMinimumIntervalSeconds = 60
            $0.clock = ClockSettings(virtual: true, frozen: true)
        }) { server in
            let now = try await server.clockSeconds()
            let tokenA = try server.token(issuedAt: now - 10)
            let tokenB = try server.token(issuedAt: now - 5)
            let specs = [PushSpec.push(authorization: tokenA), PushSpec.push(authorization: tokenB)]
            let replies = try await server.pushOnOneConnection(specs, over: transport) { _ in
                try await server.advanceClock(milliseconds: 60_000)
            }
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .accepted, for: specs[1])
        }
    }

    /// With `maxPushesPerSecondPerDevice = 2`, the third push to one device within a second gets 429 TooManyRequests;
    /// another device is not limited, and the next second the device may push again. The limit counts per second of
    /// the sandbox clock, which stands still here: the three pushes share one second however slow the machine is.
    @Test(arguments: ProviderTransport.allCases)
    func thirdPushInOneSecondIsTooManyRequests(_ transport: ProviderTransport) async throws {
        try await withProviderServer(configure: {
            $0.apns.maxPushesPerSecondPerDevice = 2
            $0.clock = ClockSettings(virtual: true, frozen: true)
        }) { server in
            let device = Fixture.token("a0")
            let specs = (0..<3).map { _ in PushSpec.push(token: device, authorization: server.test.providerToken) }
            let replies = try await server.pushOnOneConnection(specs, over: transport)
            expectReply(replies[0], .accepted, for: specs[0])
            expectReply(replies[1], .accepted, for: specs[1])
            expectReply(replies[2], .rejected(429, "TooManyRequests"), for: specs[2])
            // Another device is not limited.
            let other = PushSpec.push(token: Fixture.token("bb"), authorization: server.test.providerToken)
            expectReply(try await server.push(other, over: transport), .accepted, for: other)
            // A second later (sandbox time) the device has a new allowance.
            try await server.advanceClock(milliseconds: 1000)
            let later = PushSpec.push(token: device, authorization: server.test.providerToken)
            expectReply(try await server.push(later, over: transport), .accepted, for: later)
        }
    }

    /// A push to a configured device after its app was uninstalled gets 410 with the uninstall time; other apps still get 200.
    @Test(arguments: ProviderTransport.allCases)
    func uninstalledAppIsUnregisteredWithTimestamp(_ transport: ProviderTransport) async throws {
        let device = Fixture.token("c4")
        try await withProviderServer(configure: {
            $0.devices = [DeviceConfiguration(token: device, apps: [testTopic, Fixture.secondTopic])]
        }) { server in
            let before = PushSpec.push(token: device, authorization: server.test.providerToken)
            expectReply(try await server.push(before, over: transport), .accepted, for: before)
            let token = try #require(DeviceToken(hex: device))
            #expect(server.registry.uninstall(bundleID: testTopic, from: token, at: ReasonCase.uninstallTime))
            let after = PushSpec.push(token: device, authorization: server.test.providerToken)
            expectReply(try await server.push(after, over: transport),
                        .rejected(410, "Unregistered", timestamp: ReasonCase.uninstallTime), for: after)
            let otherApp = PushSpec.push(token: device, authorization: server.test.providerToken, topic: Fixture.secondTopic)
            expectReply(try await server.push(otherApp, over: transport), .accepted, for: otherApp)
        }
    }

    /// An unknown well-formed token is registered by its first push (200) with the topic's app, in the addressed environment.
    @Test(arguments: ProviderTransport.allCases)
    func unknownTokenIsAutoRegistered(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let device = Fixture.token("5a")
            let token = try #require(DeviceToken(hex: device))
            #expect(server.registry.device(token: token) == nil)
            let spec = PushSpec.push(token: device.uppercased(), authorization: server.test.providerToken, host: .production)
            expectReply(try await server.push(spec, over: transport), .accepted, for: spec)
            let registered = try #require(server.registry.device(token: token))
            #expect(registered.isAutoRegistered)
            #expect(registered.environment == .production)
            #expect(registered.apps[testTopic] != nil)
            // The same token is now a production device: development says BadDeviceToken.
            let development = PushSpec.push(token: device, authorization: server.test.providerToken)
            expectReply(try await server.push(development, over: transport), .rejected(400, "BadDeviceToken"), for: development)
        }
    }

    /// `GET /api/v1/pushes` lists the accepted and rejected pushes with their status, reason and authentication.
    @Test(arguments: ProviderTransport.allCases)
    func pushLogListsAcceptedAndRejectedPushes(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let specs: [(PushSpec, PushOutcome)] = [
                (.push(authorization: server.test.providerToken), .accepted),
                (.push(authorization: server.test.providerToken, extra: [("apns-push-type", "voip")]), .rejected(400, "BadTopic")),
                (.push(authorization: "garbage"), .rejected(403, "InvalidProviderToken")),
                (.push(authorization: server.test.providerToken, body: ""), .rejected(400, "PayloadEmpty")),
                (.push(authorization: server.test.providerToken, topic: testTopic + ".voip", extra: [("apns-push-type", "voip")]),
                 .accepted),
            ]
            var ids: [String] = []
            var uniqueIDs: [String] = []
            for (spec, outcome) in specs {
                let reply = try await server.push(spec, over: transport)
                expectReply(reply, outcome, for: spec)
                ids.append(reply.header("apns-id") ?? "")
                uniqueIDs.append(reply.header("apns-unique-id") ?? "")
            }
            let log = try await server.pushLog()
            #expect(log.accepted == 2)
            #expect(log.rejected == 3)
            #expect(log.pushes.count == 5)
            for ((spec, outcome), id) in zip(specs, ids) {
                let entry = try #require(log.pushes.first { $0["apnsId"] as? String == id }, "no log entry for \(id)")
                #expect(entry["deviceToken"] as? String == deviceToken)
                #expect(entry["environment"] as? String == "development")
                #expect((entry["uniqueId"] as? String) == uniqueIDs[ids.firstIndex(of: id) ?? 0], "the logged apns-unique-id is the one sent")
                switch outcome {
                case .accepted:
                    #expect(entry["status"] as? Int == 200)
                    #expect(entry["reason"] == nil || entry["reason"] is NSNull)
                    #expect(entry["authentication"] as? String == "token:\(testTeamID)/\(testKeyID)")
                    #expect(entry["payloadBytes"] as? Int == spec.body?.count)
                case .rejected(let status, let reason, _):
                    #expect(entry["status"] as? Int == status, "\(entry)")
                    #expect(entry["reason"] as? String == reason, "\(entry)")
                    if reason == "InvalidProviderToken" {
                        #expect(entry["authentication"] as? String == "none")
                    }
                }
            }
            let voip = try #require(log.pushes.first { $0["apnsId"] as? String == ids[4] })
            #expect(voip["topic"] as? String == testTopic + ".voip")
            #expect(voip["bundleId"] as? String == testTopic)
            #expect(voip["pushType"] as? String == "voip")
            let newest = try await server.pushLog(limit: 2)
            #expect(newest.pushes.compactMap { $0["apnsId"] as? String } == [ids[4], ids[3]])
            for bad in ["0", "10001", "x"] {
                let output = try await curl(["--http1.1", "-w", "\n%{http_code}", "\(server.test.httpBase)/api/v1/pushes?limit=\(bad)"])
                #expect(output.stdoutText.hasSuffix("\n400"), "limit=\(bad): \(output.stdoutText)")
                #expect(output.stdoutText.contains("invalid_parameter"))
            }
        }
    }
}
