// APNs Sandbox — each stage of the push intake on its own.
import APNsProtocol
import Intake
import Sandbox
import Testing

@Suite struct RequestStageTests {
    /// The request line's reasons, in Apple's order; an oversized header section after a valid path only.
    @Test func deviceTokenStage() {
        let stage = DeviceTokenStage()
        var get = push(submission(method: "GET"))
        #expect(stage.run(&get)?.reason == .methodNotAllowed)
        var empty = push(submission(path: "/3/device/"))
        #expect(stage.run(&empty)?.reason == .missingDeviceToken)
        var badPath = push(submission(path: "/3/device/ab/cd", oversize: .headers))
        #expect(stage.run(&badPath)?.reason == .badPath)
        var oversized = push(submission(oversize: .headers))
        #expect(stage.run(&oversized)?.reason == .payloadTooLarge)
        var good = push()
        #expect(stage.run(&good) == nil)
        #expect(good.token?.hex == token && good.record.deviceToken == token)
    }

    /// Headers: Apple's reasons, the client's apns-id lowercased or a new one, an oversized body after the headers,
    /// and the record filled in.
    @Test func headerStage() throws {
        let stage = HeaderStage()
        var duplicate = push(submission(headers: [(name: "apns-topic", value: topic), (name: "apns-topic", value: topic)]))
        #expect(stage.run(&duplicate)?.reason == .duplicateHeaders)
        var oversized = push(submission(oversize: .body))
        #expect(stage.run(&oversized)?.reason == .payloadTooLarge)
        #expect(!oversized.record.apnsID.isEmpty)
        let id = "123E4567-E89B-12D3-A456-4266554400A0"
        var given = push(submission(headers: [
            (name: "apns-id", value: id), (name: "apns-push-type", value: "background"), (name: "apns-topic", value: topic),
        ]))
        #expect(stage.run(&given) == nil)
        #expect(given.record.apnsID == id.lowercased())
        #expect(given.record.priority == 5 && given.record.pushType == .background && given.record.topic == topic)
        var generated = push()
        #expect(stage.run(&generated) == nil)
        #expect(generated.record.apnsID.count == 36)
    }

    /// The payload's reasons.
    @Test func payloadStage() {
        let stage = PayloadStage()
        var empty = push(submission(body: []))
        #expect(stage.run(&empty)?.reason == .payloadEmpty)
        var bad = push(submission(body: Array("[1]".utf8)))
        #expect(stage.run(&bad)?.reason == .badPayload)
        var good = push()
        #expect(stage.run(&good) == nil)
    }
}

@Suite struct AuthenticationStageTests {
    /// A refusal is counted by the observer; a success says who sent the push in its record.
    @Test func runsTheAuthenticator() {
        let recorder = Recorder()
        var refused = push()
        _ = HeaderStage().run(&refused)
        let failing = AuthenticationStage(FixedAuthenticator(refusal: APNsError(.expiredProviderToken)))
        #expect(failing.run(&refused, connection: (), observer: recorder)?.reason == .expiredProviderToken)
        #expect(recorder.authFailures == [.expiredProviderToken])
        var accepted = push()
        _ = HeaderStage().run(&accepted)
        #expect(AuthenticationStage(FixedAuthenticator()).run(&accepted, connection: (), observer: recorder) == nil)
        #expect(accepted.record.authentication == .token(keyID: "K", teamID: "T", issuedAt: 1_700_000_000))
        #expect(accepted.record.bundleID == topic && accepted.authenticated?.teamID == "T")
    }

    /// The dry run's topic check: `MissingTopic`, then an app the sandbox knows unless apps are auto-registered.
    @Test func topicCheck() throws {
        let strict = TopicCheck(registry: registry(), autoRegistersApps: false)
        let none = try #require(PushRequestValidator.headers([]).value)
        #expect(strict.authenticate(none, connection: (), environment: .development, nowSeconds: 0, monotonicNow: 0).error?.reason == .missingTopic)
        let unknown = try #require(PushRequestValidator.headers([(name: "apns-topic", value: "com.other")]).value)
        #expect(strict.authenticate(unknown, connection: (), environment: .development, nowSeconds: 0, monotonicNow: 0).error?.reason == .topicDisallowed)
        let lenient = TopicCheck(registry: registry(), autoRegistersApps: true)
        #expect(lenient.authenticate(unknown, connection: (), environment: .development, nowSeconds: 0, monotonicNow: 0).value?.bundleID == "com.other")
    }
}

@Suite struct FaultStageTests {
    private func authenticated() -> IntakePush {
        var push = push()
        _ = DeviceTokenStage().run(&push)
        _ = HeaderStage().run(&push)
        _ = AuthenticationStage(FixedAuthenticator()).run(&push, connection: (), observer: nil)
        return push
    }

    /// No rule: nothing happens. A reject rule answers its reason (a 410 with the time now), a GOAWAY drops the
    /// push, a latency lets it through with the fault; the observer hears of each.
    @Test func rulesDecide() {
        let recorder = Recorder()
        var plain = authenticated()
        guard case .proceed = FaultStage(FaultBook()).run(&plain, observer: recorder) else { Issue.record("not proceed"); return }
        #expect(plain.fault == nil)

        var rejected = authenticated()
        let reject = FaultStage(FaultBook(rules: [rule(.reject(.unregistered, timestamp: nil))]))
        guard case .refuse(let error) = reject.run(&rejected, observer: recorder) else { Issue.record("not refused"); return }
        #expect(error.reason == .unregistered && error.timestamp == 1_700_000_000_000)

        var dropped = authenticated()
        guard case .drop = FaultStage(FaultBook(rules: [rule(.goAway(reason: "Shutdown", errorCode: 0))])).run(&dropped, observer: recorder)
        else { Issue.record("not dropped"); return }
        #expect(dropped.fault?.applied.dropsPush == true)

        var slow = authenticated()
        guard case .proceed = FaultStage(FaultBook(rules: [rule(.none, latency: .fixed(milliseconds: 250))])).run(&slow, observer: recorder)
        else { Issue.record("not proceed"); return }
        #expect(slow.fault?.latencyMilliseconds == 250)
        #expect(slow.fault?.applied.detail == "answered as usual after 250 ms")
        #expect(recorder.faults == ["reject", "goAway", "latency"])
    }
}

@Suite struct DeviceStageTests {
    private func authenticated(_ token: String = token) -> IntakePush {
        var push = push(submission(path: "/3/device/\(token)"))
        _ = DeviceTokenStage().run(&push)
        _ = HeaderStage().run(&push)
        _ = AuthenticationStage(FixedAuthenticator()).run(&push, connection: (), observer: nil)
        return push
    }

    /// A sent push registers an unknown token; a checked one does not; a failed lookup is `InternalServerError`.
    @Test func resolveRegistersOnlyWhenSending() {
        let registry = registry()
        let stage = ResolveStage(registry)
        let unknown = String(repeating: "cd", count: 32)
        var checked = authenticated(unknown)
        #expect(stage.run(&checked, registering: false) == nil)
        #expect(registry.device(token: DeviceToken(hex: unknown)!) == nil)
        var sent = authenticated(unknown)
        #expect(stage.run(&sent, registering: true) == nil)
        #expect(registry.device(token: DeviceToken(hex: unknown)!)?.isAutoRegistered == true)
        var unreadable = authenticated()
        #expect(stage.run(&unreadable, registering: true, lookUp: { _ in false })?.reason == .internalServerError)
        var strict = authenticated(String(repeating: "ef", count: 32))
        #expect(ResolveStage(DeviceRegistry(unknownTokenPolicy: .strict)).run(&strict, registering: true)?.reason == .badDeviceToken)
    }

    /// `TooManyRequests` past the limit within one second; a new second starts over; 0 is no limit.
    @Test func rateLimit() {
        let stage = RateLimitStage(maxPerSecond: 2)
        var push = authenticated()
        #expect(stage.run(&push) == nil)
        #expect(stage.run(&push) == nil)
        #expect(stage.run(&push)?.reason == .tooManyRequests)
        var later = IntakePush(push.submission, now: push.now + 1000, monotonicNow: 0)
        later.token = push.token
        #expect(stage.run(&later) == nil)
        #expect(RateLimitStage(maxPerSecond: 0).limiter == nil)
    }

    /// The push log gets every push; a refused one with its reason and (development) an `apns-unique-id`; an
    /// accepted one's notification keeps no provider token and carries its fault.
    @Test func recordStage() {
        let recorder = Recorder()
        let stage = RecordStage(recorder)
        var refused = push(submission(headers: [(name: "apns-id", value: "123e4567-e89b-12d3-a456-4266554400a0")]))
        stage.refused(&refused, APNsError(.badDeviceToken))
        #expect(refused.record.apnsID == "123e4567-e89b-12d3-a456-4266554400a0")
        #expect(refused.record.uniqueID != nil && refused.record.rejection?.reason == .badDeviceToken)
        var accepted = authenticated()
        accepted.submission.headers.append((name: "authorization", value: "bearer secret"))
        accepted.record.headers = accepted.submission.headers
        let notification = stage.accepted(&accepted)
        #expect(notification.headers.first { $0.name == "authorization" }?.value == RecordStage.redactedAuthorization)
        #expect(notification.authentication == "token:T/K" && notification.bundleID == topic)
        #expect(recorder.records.map(\.apnsID) == [refused.record.apnsID, accepted.record.apnsID])
    }
}
