// APNs Sandbox — certificate-based provider authentication end to end (TLS client certificates
// issued by the sandbox CA, or by another CA), over h2 and HTTP/1.1 on TLS.
import Crypto
import Foundation
import TestProcessSupport
import Testing

/// A client certificate and its key on disk.
struct ClientCertificateFiles: Sendable {
    var certificate: String
    var key: String

    var curlArguments: [String] { ["--cert", certificate, "--key", key] }
}

extension ProviderServer {
    /// Issues a client certificate from the server's CA and writes it to the key directory.
    func clientCertificate(
        bundleID: String = testTopic, topics: [String]? = nil, environment: CertificateEnvironment = .both
    ) throws -> ClientCertificateFiles {
        let issued = try CertificateAuthority.issueClientCertificate(
            in: test.dataDirectory,
            request: ClientCertificateRequest(bundleID: bundleID, topics: topics, environment: environment))
        let prefix = "\(keyDirectory)/client-\(UUID().uuidString.prefix(8))"
        try issued.certificatePEM.write(toFile: prefix + ".pem", atomically: true, encoding: .utf8)
        try issued.privateKeyPEM.write(toFile: prefix + "-key.pem", atomically: true, encoding: .utf8)
        return ClientCertificateFiles(certificate: prefix + ".pem", key: prefix + "-key.pem")
    }

    /// A self-signed APNs-looking client certificate made by the openssl CLI (not the sandbox CA).
    func foreignCertificate(bundleID: String = testTopic) async throws -> ClientCertificateFiles {
        let prefix = "\(keyDirectory)/foreign-\(UUID().uuidString.prefix(8))"
        let output = try await run("openssl", args: [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", prefix + "-key.pem", "-out", prefix + ".pem", "-days", "2",
            "-subj", "/UID=\(bundleID)/CN=Apple Push Services: \(bundleID)/OU=\(testTeamID)/C=US",
            "-addext", "1.2.840.113635.100.6.3.1=DER:0500", "-addext", "1.2.840.113635.100.6.3.2=DER:0500",
            "-addext", "extendedKeyUsage=clientAuth",
        ])
        guard output.status == 0 else { throw ProcessError("openssl req: \(output)") }
        return ClientCertificateFiles(certificate: prefix + ".pem", key: prefix + "-key.pem")
    }
}

// A hang detector: the cases wait for one of the six provider-server slots (see `withProviderServer`)
// while the full suite loads both cores; a green CI run (on a1a8112, with the bulk queue) had them done at 81–88 s.
@Suite(.scaledTimeLimit(minutes: 2))
struct CertificateAuthTests {
    /// A push with a sandbox-CA client certificate and no authorization gets 200, logged as "certificate:<bundle>".
    @Test(arguments: ProviderTransport.tlsCases)
    func certificateReplacesTheProviderToken(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let certificate = try server.clientCertificate()
            let spec = PushSpec.push(authorization: nil)
            let reply = try await server.push(spec, over: transport, curlArguments: certificate.curlArguments)
            expectReply(reply, .accepted, for: spec, transport: transport)
            let entry = try #require(try await server.logEntry(apnsID: reply.header("apns-id") ?? ""))
            #expect(entry["authentication"] as? String == "certificate:\(testTopic)")
            #expect(entry["topic"] as? String == testTopic)
        }
    }

    /// A certificate minted by `apns-sandbox client-cert` authenticates a push (200).
    @Test func certificateFromTheCLIWorks() async throws {
        try await withProviderServer { server in
            let prefix = server.keyDirectory + "/cli-client"
            let output = try await run(try GracefulShutdownTests.executable(), args: [
                "client-cert", "--bundle-id", testTopic, "--data-dir", server.test.dataDirectory, "--out", prefix,
            ])
            #expect(output.status == 0, "\(output)")
            let spec = PushSpec.push(authorization: nil)
            let reply = try await server.push(spec, over: .h2TLS, curlArguments: ["--cert", prefix + ".pem", "--key", prefix + "-key.pem"])
            expectReply(reply, .accepted, for: spec, transport: .h2TLS)
        }
    }

    /// Without apns-topic, a single-topic certificate (no topic extension, or only the bundle) pushes to its bundle (200).
    @Test(arguments: ProviderTransport.tlsCases)
    func singleTopicCertificateNeedsNoTopic(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            for topics in [[], [testTopic]] {
                let certificate = try server.clientCertificate(topics: topics)
                let spec = PushSpec.push(authorization: nil, topic: nil)
                let reply = try await server.push(spec, over: transport, curlArguments: certificate.curlArguments)
                expectReply(reply, .accepted, for: spec, transport: transport)
                let entry = try await server.logEntry(apnsID: reply.header("apns-id") ?? "")
                #expect(entry?["topic"] as? String == testTopic, "topics \(topics)")
            }
        }
    }

    /// Without apns-topic, a certificate whose one topic is `<bundle>.voip` pushes to that topic, never to the bare bundle.
    @Test(arguments: ProviderTransport.tlsCases)
    func singleTopicCertificateDefaultsToItsTopic(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let voipTopic = testTopic + ".voip"
            let certificate = try server.clientCertificate(topics: [voipTopic])
            // Naming the bare bundle is refused: it is not in the certificate.
            let named = PushSpec.push(authorization: nil, topic: testTopic)
            expectReply(try await server.push(named, over: transport, curlArguments: certificate.curlArguments),
                        .rejected(400, "TopicDisallowed"), for: named, transport: transport)
            // Leaving the topic out must not reach the bare bundle either.
            let alert = PushSpec.push(authorization: nil, topic: nil)
            let alertReply = try await server.push(alert, over: transport, curlArguments: certificate.curlArguments)
            if alertReply.status == 200 {
                let entry = try await server.logEntry(apnsID: alertReply.header("apns-id") ?? "")
                #expect(entry?["topic"] as? String == voipTopic, "a push without apns-topic went to \(entry?["topic"] ?? "?")")
            }
            // A VoIP push without apns-topic uses the certificate's one topic.
            let voip = PushSpec.push(authorization: nil, topic: nil, extra: [("apns-push-type", "voip")])
            let voipReply = try await server.push(voip, over: transport, curlArguments: certificate.curlArguments)
            expectReply(voipReply, .accepted, for: voip, transport: transport)
            let entry = try await server.logEntry(apnsID: voipReply.header("apns-id") ?? "")
            #expect(entry?["topic"] as? String == voipTopic)
        }
    }

    /// Without apns-topic, the default three-topic certificate gets 400 MissingTopic.
    @Test(arguments: ProviderTransport.tlsCases)
    func multiTopicCertificateNeedsATopic(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let certificate = try server.clientCertificate()
            let spec = PushSpec.push(authorization: nil, topic: nil)
            let reply = try await server.push(spec, over: transport, curlArguments: certificate.curlArguments)
            expectReply(reply, .rejected(400, "MissingTopic"), for: spec, transport: transport)
        }
    }

    /// A topic outside the certificate (another app, or another team's app) gets 400 TopicDisallowed.
    @Test(arguments: ProviderTransport.tlsCases)
    func topicOutsideTheCertificateIsDisallowed(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let certificate = try server.clientCertificate()
            for topic in [Fixture.secondTopic, Fixture.otherTeamTopic, testTopic + ".push-type.liveactivity"] {
                let pushType = topic.hasSuffix(".push-type.liveactivity") ? [("apns-push-type", "liveactivity")] : []
                let spec = PushSpec.push(authorization: nil, topic: topic, extra: pushType)
                let reply = try await server.push(spec, over: transport, curlArguments: certificate.curlArguments)
                expectReply(reply, .rejected(400, "TopicDisallowed"), for: spec, transport: transport)
            }
        }
    }

    /// The certificate's `.voip` and `.complication` topics accept their push types (200).
    @Test(arguments: ProviderTransport.tlsCases)
    func voipAndComplicationTopicsOfTheCertificateWork(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let certificate = try server.clientCertificate()
            for kind in ["voip", "complication"] {
                let spec = PushSpec.push(authorization: nil, topic: "\(testTopic).\(kind)", extra: [("apns-push-type", kind)])
                let reply = try await server.push(spec, over: transport, curlArguments: certificate.curlArguments)
                expectReply(reply, .accepted, for: spec, transport: transport)
            }
        }
    }

    /// The location push type is token-only: a certificate listing the topic still gets 400 TopicDisallowed.
    @Test(arguments: ProviderTransport.tlsCases)
    func locationPushNeedsTokenAuthentication(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let topic = testTopic + ".location-query"
            let certificate = try server.clientCertificate(topics: [testTopic, topic])
            let spec = PushSpec.push(authorization: nil, topic: topic, extra: [("apns-push-type", "location")])
            let reply = try await server.push(spec, over: transport, curlArguments: certificate.curlArguments)
            expectReply(reply, .rejected(400, "TopicDisallowed"), for: spec, transport: transport)
            // The same push with a provider token is fine.
            let token = PushSpec.push(authorization: server.test.providerToken, topic: topic, extra: [("apns-push-type", "location")])
            expectReply(try await server.push(token, over: transport), .accepted, for: token, transport: transport)
        }
    }

    /// A development-only certificate against api.push.apple.com, or a production-only one against development, gets 403 BadCertificateEnvironment.
    @Test(arguments: ProviderTransport.tlsCases)
    func certificateOfTheOtherEnvironmentIsRejected(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let development = try server.clientCertificate(environment: .development)
            let toProduction = PushSpec.push(authorization: nil, host: .production)
            expectReply(try await server.push(toProduction, over: transport, curlArguments: development.curlArguments),
                        .rejected(403, "BadCertificateEnvironment"), for: toProduction, transport: transport)
            let toDevelopment = PushSpec.push(authorization: nil)
            expectReply(try await server.push(toDevelopment, over: transport, curlArguments: development.curlArguments),
                        .accepted, for: toDevelopment, transport: transport)

            let production = try server.clientCertificate(environment: .production)
            let toSandbox = PushSpec.push(authorization: nil, host: .sandbox)
            expectReply(try await server.push(toSandbox, over: transport, curlArguments: production.curlArguments),
                        .rejected(403, "BadCertificateEnvironment"), for: toSandbox, transport: transport)
            let toProduction2 = PushSpec.push(token: Fixture.token("e2"), authorization: nil, host: .production)
            expectReply(try await server.push(toProduction2, over: transport, curlArguments: production.curlArguments),
                        .accepted, for: toProduction2, transport: transport)
        }
    }

    /// A certificate from another CA (self-signed by openssl) gets 403 BadCertificate, even with a valid provider token.
    @Test(arguments: ProviderTransport.tlsCases)
    func certificateOfAnotherAuthorityIsBad(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let foreign = try await server.foreignCertificate()
            let spec = PushSpec.push(authorization: nil)
            expectReply(try await server.push(spec, over: transport, curlArguments: foreign.curlArguments),
                        .rejected(403, "BadCertificate"), for: spec, transport: transport)
            let withToken = PushSpec.push(authorization: server.test.providerToken)
            expectReply(try await server.push(withToken, over: transport, curlArguments: foreign.curlArguments),
                        .rejected(403, "BadCertificate"), for: withToken, transport: transport)
        }
    }

    /// On a certificate connection the authorization header is ignored: a garbage bearer still gets 200.
    @Test(arguments: ProviderTransport.tlsCases)
    func authorizationIsIgnoredOnCertificateConnections(_ transport: ProviderTransport) async throws {
        try await withProviderServer { server in
            let certificate = try server.clientCertificate()
            let specs = [
                PushSpec.push(authorization: "garbage"),
                PushSpec.push(authorization: try server.token(Fixture.otherTeamKeyID)),
                PushSpec.push(authorization: server.test.providerToken),
            ]
            let replies = try await server.pushOnOneConnection(specs, over: transport, curlArguments: certificate.curlArguments)
            for (reply, spec) in zip(replies, specs) {
                expectReply(reply, .accepted, for: spec, transport: transport)
                let entry = try await server.logEntry(apnsID: reply.header("apns-id") ?? "")
                #expect(entry?["authentication"] as? String == "certificate:\(testTopic)")
            }
        }
    }

    /// A certificate connection is offered the full stream limit from its first SETTINGS frame.
    @Test func certificateConnectionStartsWithTheFullStreamLimit() async throws {
        try await withProviderServer(configure: { $0.limits.maxConcurrentStreams = 40 }) { server in
            let certificate = try server.clientCertificate()
            let specs = [PushSpec.push(authorization: nil), PushSpec.push(authorization: nil)]
            let sequence = try await server.h2Sequence(
                specs, tls: true, certificate: (certificate.certificate, certificate.key))
            #expect(sequence.initialMaxConcurrentStreams == 40)
            for (reply, spec) in zip(sequence.replies, specs) { expectReply(reply, .accepted, for: spec) }
            #expect(sequence.maxConcurrentStreamsAfter == [40, 40])
            // Without a certificate, the same server starts at one stream.
            let tokenSequence = try await server.h2Sequence([.push(authorization: server.test.providerToken)], tls: true)
            #expect(tokenSequence.initialMaxConcurrentStreams == 1)
            #expect(tokenSequence.maxConcurrentStreamsAfter == [40])
        }
    }
}

@Suite struct ClientCertificateAPITests {
    /// The API mints a certificate that authenticates pushes; bad input gets a JSON problem.
    @Test func apiIssuesUsableCertificates() async throws {
        try await withServer { server in
            let minted = try await curl([
                "-X", "POST", "\(server.httpBase)/api/v1/apps/com.example.app/client-certificates",
                "-H", "content-type: application/json", "-d", #"{"environment":"development"}"#, "-w", "\n%{http_code}",
            ])
            let lines = minted.stdoutText.split(separator: "\n")
            #expect(lines.last == "201")
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(lines.dropLast().joined(separator: "\n").utf8)) as? [String: Any])
            #expect(json["environment"] as? String == "development")
            #expect((json["topics"] as? [String])?.contains("com.example.app.voip") == true)
            let directory = try makeTemporaryDirectory("api-cert")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let certificate = directory + "/c.pem"
            let key = directory + "/k.pem"
            try #require((json["certificatePem"] as? String)?.write(toFile: certificate, atomically: true, encoding: .utf8) != nil)
            try #require((json["privateKeyPem"] as? String)?.write(toFile: key, atomically: true, encoding: .utf8) != nil)
            let push = try await curl(server.curlResolve + [
                "--http2", "--cacert", server.caPath, "--cert", certificate, "--key", key,
                "-X", "POST", "\(server.tlsBase)/3/device/\(deviceToken)", "-H", "apns-topic: com.example.app",
                "-d", #"{"aps":{"alert":"hi"}}"#, "-o", "/dev/null", "-w", "%{http_code}",
            ])
            #expect(push.stdoutText == "200")

            let bad = try await curl([
                "-X", "POST", "\(server.httpBase)/api/v1/apps/com.example.app/client-certificates",
                "-H", "content-type: application/json", "-d", #"{"environment":"staging"}"#, "-w", "\n%{http_code}",
            ])
            #expect(bad.stdoutText.hasSuffix("\n422"))
            #expect(bad.stdoutText.contains("invalid_environment"))
            let garbage = try await curl([
                "-X", "POST", "\(server.httpBase)/api/v1/apps/com.example.app/client-certificates",
                "-H", "content-type: application/json", "-d", "{nope", "-w", "\n%{http_code}",
            ])
            #expect(garbage.stdoutText.hasSuffix("\n400"))
        }
    }
}
