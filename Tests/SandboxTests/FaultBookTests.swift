// APNs Sandbox — fault rules: matching, first-match order, probability from a seed, counts, expiry, rates, latency.
import APNsProtocol
import Sandbox
import Testing

@Suite struct FaultBookTests {
    private func push(
        token: String = String(repeating: "ab", count: 32), topic: String = "com.example.app", pushType: PushType? = .alert,
        priority: Int = 10, headers: [(name: String, value: String)] = [], connection: UInt64 = 1
    ) -> FaultSubject {
        FaultSubject(
            deviceToken: token, topic: topic, bundleID: "com.example.app", pushType: pushType, priority: priority,
            environment: .development, teamID: "TEAM", keyID: "KEY", headers: headers,
            apnsID: "00000000-0000-0000-0000-000000000001", connectionID: connection)
    }

    private func rule(
        _ id: String, match: FaultMatch = FaultMatch(), action: FaultAction = .closeConnection, probability: Double = 1,
        seed: UInt64 = 1, count: Int? = nil, expiresAt: Int64? = nil, abovePerSecond: Int? = nil, latency: FaultLatency? = nil
    ) -> FaultRule {
        FaultRule(id: id, match: match, action: action, latency: latency, probability: probability, seed: seed, count: count,
                  expiresAt: expiresAt, abovePerSecond: abovePerSecond, createdAt: 0)
    }

    @Test func everyConditionMustHold() {
        let match = FaultMatch(
            tokenPrefix: "abab", topic: "com.example.app", pushType: .alert, priority: 10, environment: .development,
            teamID: "TEAM", keyID: "KEY", headers: ["apns-collapse-id": "c"], connectionID: 1)
        #expect(match.matches(push(headers: [("apns-collapse-id", "c")])))
        #expect(!match.matches(push(headers: [])))
        #expect(!match.matches(push(token: "cd" + String(repeating: "ab", count: 31), headers: [("apns-collapse-id", "c")])))
        #expect(!match.matches(push(pushType: .background, headers: [("apns-collapse-id", "c")])))
        #expect(!match.matches(push(priority: 5, headers: [("apns-collapse-id", "c")])))
        #expect(!match.matches(push(headers: [("apns-collapse-id", "c")], connection: 2)))
        #expect(FaultMatch().matches(push()))
    }

    @Test func firstMatchWinsInOrderAndPositionInserts() throws {
        let book = FaultBook(rules: [rule("topic", match: FaultMatch(topic: "other")), rule("any")])
        #expect(book.decide(push(), now: 0)?.ruleID == "any")
        try book.add(rule("front"), at: 0)
        #expect(book.decide(push(), now: 0)?.ruleID == "front")
        #expect(book.entries.map(\.rule.id) == ["front", "topic", "any"])
        #expect(throws: FaultBook.Problem.duplicateID("any")) { try book.add(rule("any")) }
        #expect(book.remove(id: "front") && !book.remove(id: "front"))
        #expect(book.entries.first { $0.rule.id == "topic" }?.matched == 0)
        #expect(book.totals.applied == 2 && book.totals.byAction == ["close": 2])
    }

    @Test func countAndExpiryEndARule() {
        let book = FaultBook(rules: [rule("twice", count: 2), rule("until", expiresAt: 1_000)])
        #expect(book.decide(push(), now: 0)?.ruleID == "twice")
        #expect(book.decide(push(), now: 0)?.ruleID == "twice")
        #expect(book.decide(push(), now: 999)?.ruleID == "until")
        #expect(book.decide(push(), now: 1_000) == nil)
        #expect(book.entries.map { $0.state(at: 1_000) } == ["exhausted", "expired"])
        #expect(book.entries.first?.remaining == 0 && book.entries.first?.applied == 2)
    }

    /// The same seed gives the same sequence of decisions and latencies; another seed another.
    @Test func seededProbabilityAndLatencyRepeat() {
        func run(seed: UInt64) -> [Int64?] {
            let book = FaultBook(rules: [rule("coin", probability: 0.5, seed: seed, latency: .uniform(minMilliseconds: 10, maxMilliseconds: 90))])
            return (0..<64).map { _ in book.decide(push(), now: 0)?.latencyMilliseconds }
        }
        let first = run(seed: 7)
        #expect(first == run(seed: 7))
        #expect(first != run(seed: 8))
        let applied = first.compactMap { $0 }
        #expect((20...44).contains(applied.count), "\(applied.count) of 64")
        #expect(applied.allSatisfy { (10...90).contains($0) })
    }

    @Test func latencyDistributions() {
        var generator = SeededGenerator(seed: 99)
        #expect(FaultLatency.fixed(milliseconds: 40).draw(&generator) == 40)
        let normal = (0..<2_000).map { _ in FaultLatency.normal(meanMilliseconds: 100, standardDeviationMilliseconds: 10).draw(&generator) }
        let mean = Double(normal.reduce(0, +)) / Double(normal.count)
        #expect(abs(mean - 100) < 2 && normal.allSatisfy { $0 >= 40 && $0 <= 160 })
        #expect(FaultLatency.normal(meanMilliseconds: 0, standardDeviationMilliseconds: 50).draw(&generator) >= 0)
    }

    /// `abovePerSecond` lets the first N matching pushes of each second through.
    @Test func throttleAboveARate() {
        let book = FaultBook(rules: [rule("throttle", action: .reject(.tooManyRequests, timestamp: nil), abovePerSecond: 2)])
        let first = (0..<4).map { _ in book.decide(push(), now: 5_000)?.ruleID }
        #expect(first == [nil, nil, "throttle", "throttle"])
        #expect(book.decide(push(), now: 6_000) == nil)
    }

    @Test func emptyBookAndReplace() {
        let book = FaultBook()
        #expect(book.isEmpty && book.decide(push(), now: 0) == nil)
        book.replaceAll(with: [rule("a")])
        #expect(!book.isEmpty && book.decide(push(), now: 0)?.ruleID == "a")
        book.replaceAll(with: [rule("a")])
        #expect(book.totals.applied == 0 && book.entries.first?.applied == 0)
    }

    @Test func timestampsParse() {
        #expect(ISOTimestamp.milliseconds(from: "1970-01-01T00:00:00Z") == 0)
        #expect(ISOTimestamp.milliseconds(from: "2026-12-02T08:00:00.250Z") == 1_796_198_400_250)
        #expect(ISOTimestamp.milliseconds(from: ISOTimestamp.string(milliseconds: 1_700_000_000_123)) == 1_700_000_000_123)
        #expect(ISOTimestamp.milliseconds(from: "2026-13-02T08:00:00Z") == nil)
        #expect(ISOTimestamp.milliseconds(from: "2026-12-02 08:00:00Z") == nil)
        #expect(ISOTimestamp.milliseconds(from: "yesterday") == nil)
    }
}
