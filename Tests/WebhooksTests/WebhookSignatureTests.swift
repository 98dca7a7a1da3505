// APNs Sandbox — Standard Webhooks signing, the retry schedule and the circuit breaker.
import Crypto
import Foundation
import Testing
import Webhooks

@Suite struct WebhookSignatureTests {
    /// The example of the Standard Webhooks specification and its reference libraries.
    @Test func matchesTheSpecificationsExample() throws {
        let key = try #require(WebhookSignature.key(ofSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let signature = WebhookSignature.signature(
            key: key, messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    /// Verification accepts the right signature among several and rejects a changed body, id or timestamp.
    @Test func verifiesOnlyTheSignedMessage() throws {
        let secret = WebhookSignature.generateSecret()
        let key = try #require(WebhookSignature.key(ofSecret: secret))
        let body = Array(#"{"type":"push.accepted"}"#.utf8)
        let headers = WebhookSignature.headers(key: key, messageID: "evt_1", timestamp: 1_800_000_000, body: body)
        let signature = try #require(headers.first { $0.0 == "webhook-signature" }?.1)
        #expect(headers.map(\.0) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(WebhookSignature.verify(secret: secret, messageID: "evt_1", timestamp: "1800000000", body: body,
                                        header: "v1,bm90IGl0 " + signature))
        #expect(!WebhookSignature.verify(secret: secret, messageID: "evt_2", timestamp: "1800000000", body: body, header: signature))
        #expect(!WebhookSignature.verify(secret: secret, messageID: "evt_1", timestamp: "1800000001", body: body, header: signature))
        #expect(!WebhookSignature.verify(secret: secret, messageID: "evt_1", timestamp: "1800000000", body: body + [0x20], header: signature))
    }

    /// Generated secrets are `whsec_` + base64 of 24 random bytes, different every time; malformed ones are refused.
    @Test func secretsAreGeneratedAndParsed() {
        let first = WebhookSignature.generateSecret()
        let second = WebhookSignature.generateSecret()
        #expect(first.hasPrefix("whsec_") && first != second)
        #expect(WebhookSignature.key(ofSecret: first)?.count == 24)
        #expect(WebhookSignature.key(ofSecret: "whsec_!!!") == nil)
        #expect(WebhookSignature.key(ofSecret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == nil)
        #expect(WebhookSignature.key(ofSecret: "whsec_" + Data([1, 2, 3]).base64EncodedString()) == nil)
    }
}

@Suite struct DeliveryPolicyTests {
    /// The default schedule is Standard Webhooks' (0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h), ±10 % jitter, then nothing.
    @Test func retryScheduleWithJitter() {
        let settings = WebhookSettings()
        #expect(settings.retryScheduleMilliseconds == [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000])
        #expect(settings.nextAttempt(after: 1, failedAt: 1_000, random: { 0.5 }) == 6_000)
        #expect(settings.nextAttempt(after: 1, failedAt: 1_000, random: { 0 }) == 5_500)
        #expect(settings.nextAttempt(after: 1, failedAt: 1_000, random: { 1 }) == 6_500)
        #expect(settings.nextAttempt(after: 6, failedAt: 0, random: { 0.5 }) == 36_000_000)
        #expect(settings.nextAttempt(after: 7, failedAt: 0, random: { 0.5 }) == nil)
    }

    /// Closed → open after the threshold → one trial after the cooldown → open twice as long on failure,
    /// closed on success.
    @Test func circuitBreakerOpensTrialsAndCloses() {
        var settings = WebhookSettings()
        settings.breakerFailureThreshold = 3
        settings.breakerCooldownMilliseconds = 1_000
        var breaker = CircuitBreaker()
        #expect(breaker.allowedAttempts(capacity: 8, inFlight: 2, now: 0) == 6)
        for _ in 0..<2 { breaker.recordFailure(now: 10, settings: settings) }
        #expect(breaker.state == .closed)
        breaker.recordFailure(now: 10, settings: settings)
        #expect(breaker.state == .open(until: 1_010))
        #expect(breaker.allowedAttempts(capacity: 8, inFlight: 0, now: 500) == 0)
        #expect(breaker.allowedAttempts(capacity: 8, inFlight: 0, now: 1_010) == 1)
        #expect(breaker.state == .halfOpen)
        #expect(breaker.allowedAttempts(capacity: 8, inFlight: 1, now: 1_011) == 0)
        breaker.recordFailure(now: 1_100, settings: settings)
        #expect(breaker.state == .open(until: 3_100))
        _ = breaker.allowedAttempts(capacity: 8, inFlight: 0, now: 3_100)
        breaker.recordSuccess()
        #expect(breaker.state == .closed && breaker.consecutiveFailures == 0)
        #expect(breaker.allowedAttempts(capacity: 8, inFlight: 0, now: 3_200) == 8)
    }

    /// A half-open breaker with nothing to try waits, open and due, instead of staying half-open forever.
    @Test func idleTrialReturnsToOpen() {
        var settings = WebhookSettings()
        settings.breakerFailureThreshold = 1
        settings.breakerCooldownMilliseconds = 100
        var breaker = CircuitBreaker()
        breaker.recordFailure(now: 0, settings: settings)
        #expect(breaker.allowedAttempts(capacity: 4, inFlight: 0, now: 100) == 1)
        breaker.trialNotStarted(now: 150)
        #expect(breaker.state == .open(until: 150))
        #expect(breaker.allowedAttempts(capacity: 4, inFlight: 0, now: 150) == 1)
    }
}
