// APNs Sandbox — builtin extensions: steps, budget, grace and every simulated behaviour.
import APNsProtocol
import Crypto
import Foundation
import Sandbox
import Testing

@testable import ExtensionRuntime

@Suite struct BuiltinRuntimeTests {
    static func builtin(_ steps: String, budget: Int = 1000, grace: Int = 500) -> String {
        #"{"kind":"builtin","budgetMs":\#(budget),"graceMs":\#(grace),"steps":[\#(steps)]}"#
    }

    /// A rewrite step's content is shown (`processed`), with its steps in the timeline.
    @Test func rewriteIsProcessed() throws {
        let harness = try RuntimeHarness()
        var push = TestPush(Self.builtin(#"{"step":"rewrite","title":"[Processed] {{title}}","body":"{{body}} #{{userInfo.k}}{{nope}}"}"#))
        push.collapseID = "c1"
        let result = try harness.result(push)
        #expect(result.outcome == .processed)
        #expect(result.content.title == "[Processed] Secret")
        #expect(result.content.body == "Encrypted #1{{nope}}")
        #expect(result.content.userInfoJSON == #"{"k":1}"#)
        #expect(result.timeline.map(\.step) == ["extension-started", "extension-step-started",
                                                "extension-step-finished", "extension-handler-called"])
    }

    /// `hang`: nothing answers, `timeWillExpire` included → `original-timeout` exactly at budget + grace.
    @Test func hangTimesOutAtBudgetPlusGrace() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let start = clock.nowMilliseconds
        let run = harness.run(TestPush(Self.builtin(#"{"step":"simulate","behavior":"hang"}"#)))
        #expect(waitUntil { clock.pendingTaskCount == 1 })
        clock.advance(byMilliseconds: 999)
        #expect(run.result == nil)
        clock.advance(byMilliseconds: 1)
        #expect(waitUntil { clock.pendingTaskCount == 1 })  // the grace timer
        clock.advance(byMilliseconds: 499)
        usleep(20_000)
        #expect(run.result == nil)
        clock.advance(byMilliseconds: 1)
        let result = try run.wait()
        #expect(result.outcome == .originalTimeout)
        #expect(result.content == TestPush(Self.builtin("")).original)
        #expect(result.entries(.timeWillExpire).first?.at == start + 1000)
        #expect(run.calls == 1)
    }

    /// `call-in-expire`: the content handed over in timeWillExpire is a best attempt.
    @Test func callInExpireIsBestAttempt() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let run = harness.run(TestPush(Self.builtin(
            #"{"step":"rewrite","title":"late"},{"step":"simulate","behavior":"call-in-expire"}"#)))
        #expect(waitUntil { harness.runtime.runningInstanceCount == 1 && clock.pendingTaskCount == 1 })
        usleep(20_000)
        clock.advance(byMilliseconds: 1000)
        let result = try run.wait()
        #expect(result.outcome == .bestAttempt)
        #expect(result.content.title == "late")
    }

    /// A step still running at the budget: Apple's template hands over the best attempt so far.
    @Test func slowStepYieldsBestAttemptAtTheBudget() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let run = harness.run(TestPush(Self.builtin(
            #"{"step":"rewrite","title":"partial"},{"step":"simulate","delayMs":5000}"#)))
        usleep(30_000)
        #expect(waitUntil { clock.pendingTaskCount == 2 })  // budget and the delay
        clock.advance(byMilliseconds: 1000)
        let result = try run.wait()
        #expect(result.outcome == .bestAttempt)
        #expect(result.content.title == "partial")
        #expect(result.has(.timeWillExpire))
    }

    /// `never-call`: the steps finish, the handler is never called → `original-timeout`.
    @Test func neverCallTimesOut() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let run = harness.run(TestPush(Self.builtin(#"{"step":"simulate","behavior":"never-call"}"#)))
        #expect(waitUntil { run.result == nil && clock.pendingTaskCount == 1 })
        usleep(20_000)
        clock.advance(byMilliseconds: 1000)
        #expect(waitUntil { clock.pendingTaskCount == 1 })
        clock.advance(byMilliseconds: 500)
        let result = try run.wait()
        #expect(result.outcome == .originalTimeout)
        #expect(result.has(.stepFinished, containing: "simulate"))
    }

    /// crash, error, exceed-memory and remove-alert end with the original and the right outcome.
    @Test func simulatedFailures() throws {
        let harness = try RuntimeHarness()
        let cases: [(String, DisplayOutcome, ExtensionTimelineStep)] = [
            ("crash", .originalCrash, .crashed), ("error", .originalError, .error),
            ("exceed-memory", .originalCrash, .memoryExceeded), ("remove-alert", .originalNoAlert, .handlerCalled),
        ]
        for (behavior, outcome, step) in cases {
            let push = TestPush(Self.builtin(#"{"step":"rewrite","title":"changed"},{"step":"simulate","delayMs":5,"behavior":"\#(behavior)"}"#))
            let result = try harness.result(push)
            #expect(result.outcome == outcome, "\(behavior)")
            #expect(result.content == push.original, "\(behavior)")
            #expect(result.has(step), "\(behavior): \(result.timeline)")
        }
    }

    /// `call-twice`: the first content is shown and the second call is noted as ignored.
    @Test func secondHandlerCallIsIgnoredAndNoted() throws {
        let harness = try RuntimeHarness()
        let run = harness.run(TestPush(Self.builtin(#"{"step":"simulate","behavior":"call-twice"}"#)))
        let result = try run.wait()
        #expect(result.outcome == .processed)
        #expect(result.entries(.handlerCalled).count == 1)
        #expect(result.has(.handlerIgnored, containing: "first content wins"))
        usleep(50_000)
        #expect(run.calls == 1)
    }

    /// decrypt: the key from the device keychain opens `encrypted_data`; title and body are set, userInfo merged.
    @Test func decryptSetsAlertAndMergesUserInfo() throws {
        let harness = try RuntimeHarness()
        let key = (0..<32).map { UInt8($0) }
        let secret = try encrypted(#"{"title":"Alice","body":"Meet at 6","orderId":42,"userInfo":{"thread":"t1"}}"#, key: key)
        var push = TestPush(Self.builtin(#"{"step":"rewrite","subtitle":"via {{userInfo.orderId}}"},{"step":"decrypt"}"#))
        push.payload = #"{"aps":{"alert":{"title":"New message","body":"(encrypted)"},"mutable-content":1},"encrypted_data":"\#(secret)"}"#
        push.keys = [push.bundleID: Data(key).base64EncodedString()]
        let result = try harness.result(push)
        #expect(result.outcome == .processed)
        #expect(result.content.title == "Alice")
        #expect(result.content.body == "Meet at 6")
        #expect(result.content.subtitle == "via 42")  // decrypt (critical) ran before rewrite
        let userInfo = try JSON.parse(try #require(result.content.userInfoJSON))
        #expect(userInfo["orderId"] == .number(42) && userInfo["thread"]?.string == "t1")
        #expect(userInfo["encrypted_data"]?.string == secret)
        #expect(result.details(.stepStarted) == ["decrypt (critical)", "rewrite"])
    }

    /// A wrong key (or no key) fails the critical decrypt step: the original is shown (`original-error`).
    @Test func decryptFailureShowsTheOriginal() throws {
        let harness = try RuntimeHarness()
        let secret = try encrypted(#"{"title":"Alice"}"#, key: [UInt8](repeating: 1, count: 32))
        var push = TestPush(Self.builtin(#"{"step":"decrypt","critical":true},{"step":"rewrite","title":"x"}"#))
        push.payload = #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"encrypted_data":"\#(secret)"}"#
        push.keys = [push.bundleID: Data([UInt8](repeating: 2, count: 32)).base64EncodedString()]
        let wrongKey = try harness.result(push)
        #expect(wrongKey.outcome == .originalError)
        #expect(wrongKey.content == push.original)
        #expect(wrongKey.has(.stepFailed, containing: "authentication failed"))
        #expect(!wrongKey.has(.stepStarted, containing: "rewrite"))
        push.keys = [:]
        let noKey = try harness.result(push)
        #expect(noKey.outcome == .originalError)
        #expect(noKey.has(.stepFailed, containing: "no key"))
    }

    /// localize resolves loc keys a decrypted plaintext brought, for the device locale.
    @Test func localizeUsesDeviceLocaleAndAppStrings() throws {
        let harness = try RuntimeHarness()
        let key = [UInt8](repeating: 9, count: 32)
        let secret = try encrypted(#"{"loc-key":"INVITE","loc-args":["Ana","Bo"],"title":"GREETING"}"#, key: key)
        var push = TestPush(Self.builtin(#"{"step":"decrypt"},{"step":"localize"}"#))
        push.payload = #"{"aps":{"alert":{"title":"x","body":"y"},"mutable-content":1},"encrypted_data":"\#(secret)"}"#
        push.keys = [push.bundleID: Data(key).base64EncodedString()]
        push.locale = "fr_CA"
        push.strings = ["fr": ["INVITE": "%2$@ et %1$@ vous invitent", "GREETING": "Bonjour"], "en": ["INVITE": "no"]]
        let result = try harness.result(push)
        #expect(result.content.body == "Bo et Ana vous invitent")
        #expect(result.content.title == "Bonjour")
    }

    /// A step over its own timeout fails; a non-critical one lets the pipeline go on.
    @Test func stepTimeoutContinuesWhenNotCritical() throws {
        let harness = try RuntimeHarness()
        let result = try harness.result(TestPush(Self.builtin(
            #"{"step":"simulate","delayMs":5000,"timeoutMs":50},{"step":"rewrite","title":"after"}"#, budget: 3000)))
        #expect(result.outcome == .processed)
        #expect(result.content.title == "after")
        #expect(result.has(.stepFailed, containing: "timed out after 50 ms; continuing"))
    }

    /// The budget header shortens the budget only when the runtime allows it; otherwise it is noted as ignored.
    @Test func budgetHeaderHonouredOnlyWhenEnabled() throws {
        for allowed in [true, false] {
            let clock = ManualClock()
            let harness = try RuntimeHarness(clock: clock) { $0.allowBudgetHeader = allowed }
            let start = clock.nowMilliseconds
            var push = TestPush(Self.builtin(#"{"step":"simulate","behavior":"hang"}"#, budget: 1000, grace: 100))
            push.headers = [["apns-topic", push.bundleID], ["apns-sandbox-extension-budget-ms", "200"]]
            let run = harness.run(push)
            #expect(waitUntil { clock.pendingTaskCount == 1 })
            clock.advance(byMilliseconds: 200)
            if allowed {
                #expect(waitUntil { clock.pendingTaskCount == 1 })
                clock.advance(byMilliseconds: 100)
                let result = try run.wait()
                #expect(result.outcome == .originalTimeout)
                #expect(result.entries(.timeWillExpire).first?.at == start + 200)
                #expect(result.has(.budgetHeader, containing: "budget 200 ms"))
            } else {
                usleep(30_000)
                #expect(run.result == nil)
                clock.advance(byMilliseconds: 800)
                #expect(waitUntil { clock.pendingTaskCount == 1 })
                clock.advance(byMilliseconds: 100)
                let result = try run.wait()
                #expect(result.entries(.timeWillExpire).first?.at == start + 1000)
                #expect(result.has(.budgetHeader, containing: "ignored"))
            }
        }
    }

    /// Concurrent instances of one app never see each other's content.
    @Test func concurrentInstancesDoNotShareState() throws {
        let harness = try RuntimeHarness()
        let runs = (0..<200).map { index -> (Int, PendingRun) in
            var push = TestPush(Self.builtin(
                ##"{"step":"simulate","delayMs":\##(index % 7)},{"step":"rewrite","title":"#{{userInfo.n}}","body":"{{body}}"}"##))
            push.payload = #"{"aps":{"alert":{"title":"t","body":"b\#(index)"},"mutable-content":1},"n":\#(index)}"#
            return (index, harness.run(push))
        }
        for (index, run) in runs {
            let result = try run.wait()
            #expect(result.content.title == "#\(index)" && result.content.body == "b\(index)")
        }
    }

    /// An invalid configuration shows the original (`original-error`) with the reason in the timeline.
    @Test func invalidConfigurationIsAnError() throws {
        let harness = try RuntimeHarness()
        let result = try harness.result(TestPush(#"{"kind":"builtin","steps":[{"step":"nope"}]}"#))
        #expect(result.outcome == .originalError)
        #expect(result.has(.error, containing: "steps[0].step"))
    }

    /// Over `maxConcurrentInstances` instances wait for a slot (noted), and all finish.
    @Test func instancesBeyondTheLimitWait() throws {
        let harness = try RuntimeHarness { $0.maxConcurrentInstances = 2 }
        let runs = (0..<6).map { _ in harness.run(TestPush(Self.builtin(#"{"step":"simulate","delayMs":30}"#))) }
        let results = try runs.map { try $0.wait() }
        #expect(results.allSatisfy { $0.outcome == .processed })
        #expect(results.filter { $0.has(.queued) }.count == 4)
        #expect(waitUntil { harness.runtime.runningInstanceCount == 0 && harness.runtime.waitingInstanceCount == 0 })
    }
}
