// APNs Sandbox — exec extensions: real processes speaking docs/extension-protocol.md.
import APNsProtocol
import Foundation
import Glibc
import Sandbox
import TestProcessSupport
import Testing

@testable import ExtensionRuntime

/// Real processes and real time: serialized so that budgets of a few hundred milliseconds hold on a small VM.
@Suite(.serialized) struct ExecRuntimeTests {
    /// Content in time is shown; the process ran in its own fresh directory with a clean environment.
    @Test func contentInTimeIsProcessed() throws {
        // Not setenv: changing the environment races with other tests' Process.run (a crash in
        // Foundation's copy of environ). The parent always has variables the child must not see.
        let allowed: Set<String> = ["PATH", "HOME", "TMPDIR", "LANG", "APNS_SANDBOX_APP_GROUP", "APNS_SANDBOX_INSTANCE", "PWD", "LC_CTYPE"]
        #expect(ProcessInfo.processInfo.environment.keys.contains { !allowed.contains($0) })
        let harness = try RuntimeHarness()
        let push = TestPush(Fixtures.python("processed"))
        let result = try harness.result(push)
        #expect(result.outcome == .processed, "\(result.timeline)")
        #expect(result.content.title == "[exec] Secret")
        let userInfo = try JSON.parse(try #require(result.content.userInfoJSON))
        let seen = try #require(userInfo["seen"])
        let cwd = try #require(seen["cwd"]?.string)
        #expect(cwd.hasPrefix(harness.data.path + "/instances/"))
        #expect(seen["files"] == .array([]))
        let environment = try #require(seen["env"]?.members).map(\.0).filter { $0 != "PWD" && $0 != "LC_CTYPE" }
        #expect(Set(environment) == ["PATH", "HOME", "TMPDIR", "LANG", "APNS_SANDBOX_APP_GROUP", "APNS_SANDBOX_INSTANCE"])
        #expect(seen["env"]?["HOME"]?.string == cwd && seen["env"]?["PATH"]?.string == "/usr/local/bin:/usr/bin:/bin")
        #expect(seen["env"]?["APNS_SANDBOX_APP_GROUP"]?.string == harness.appGroup(push))
        #expect(!FileManager.default.fileExists(atPath: cwd))  // removed at the end
        #expect(waitUntil { harness.runtime.processCount == 0 })
    }

    /// The request message carries the identifier, the app group, the locale, the app's key and the payload.
    @Test func requestMessageFollowsTheProtocol() throws {
        let harness = try RuntimeHarness()
        var push = TestPush(Fixtures.python("echo-request"))
        push.collapseID = "thread-7"
        push.keys = [push.bundleID: "a2V5", "com.other.app": "b3RoZXI="]
        push.locale = "de_DE"
        let result = try harness.result(push)
        let userInfo = try #require(result.content.userInfoJSON)
        let request = try #require(try JSON.parse(userInfo)["request"])
        #expect(request["type"]?.string == "request")
        #expect(request["identifier"]?.string == "thread-7")
        #expect(request["apnsId"]?.string == push.apnsID)
        #expect(request["bundleId"]?.string == push.bundleID)
        #expect(request["locale"]?.string == "de_DE")
        #expect(request["appGroup"]?.string == harness.appGroup(push))
        #expect(request["keys"] == .object([(push.bundleID, .string("a2V5"))]))
        #expect(request["content"]?["title"]?.string == "Secret")
        #expect(request["content"]?["userInfo"]?["aps"]?["mutable-content"] == .number(1))
    }

    /// Content only after `timeWillExpire` (within the grace) is a best attempt. The budget and the grace are
    /// sandbox time (a manual clock here): nothing happens until the clock reaches the budget, however long the
    /// process takes to start, and the grace does not run out while the process answers (in real time) — a real
    /// clock's 400 ms budget and its 1.4 s bound raced a loaded machine.
    @Test func contentAfterTimeWillExpireIsBestAttempt() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let start = clock.nowMilliseconds
        let run = harness.run(TestPush(Fixtures.python("expire", budgetMs: 400, graceMs: 1000)))
        #expect(waitUntil { clock.pendingTaskCount == 1 })  // the budget
        clock.advance(byMilliseconds: 399)
        #expect(run.result == nil)
        clock.advance(byMilliseconds: 1)
        let result = try run.wait()
        #expect(result.outcome == .bestAttempt)
        #expect(result.content.title == "[late] Secret")
        #expect(result.entries(.timeWillExpire).first?.at == start + 400)
        #expect(result.has(.killed, containing: "still running"))
        #expect(waitUntil { harness.runtime.processCount == 0 })
    }

    /// No content at all: the original at budget + grace, and the process group is killed. Sandbox time (a manual
    /// clock): exactly at 300 + 200 ms of it, where a real clock's bound (under 900 ms) raced a loaded machine.
    @Test func silenceTimesOutAtBudgetPlusGraceAndKills() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let start = clock.nowMilliseconds
        let run = harness.run(TestPush(Fixtures.python("never", budgetMs: 300, graceMs: 200)))
        // The budget, and the process running (to be killed; before its spawn there is nothing to kill).
        #expect(waitUntil(seconds: 30) { clock.pendingTaskCount == 1 && harness.runtime.processCount == 1 })
        clock.advance(byMilliseconds: 300)
        #expect(waitUntil { clock.pendingTaskCount == 1 })  // the grace timer
        clock.advance(byMilliseconds: 199)
        #expect(run.result == nil)
        clock.advance(byMilliseconds: 1)
        let result = try run.wait()
        #expect(result.outcome == .originalTimeout)
        #expect(result.entries(.timeWillExpire).first?.at == start + 300)
        #expect(result.has(.timeWillExpire))
        #expect(result.has(.killed, containing: "original-timeout"))
        #expect(waitUntil { harness.runtime.processCount == 0 })
    }

    /// Crash (SIGSEGV), exit 1, garbage on stdout, exit 0 without content: the original, with the reason.
    @Test func failuresShowTheOriginal() throws {
        let harness = try RuntimeHarness()
        let cases: [(String, DisplayOutcome, String)] = [
            (Fixtures.shell("crash.sh"), .originalCrash, "SIGSEGV"),
            (Fixtures.shell("exit1.sh"), .originalError, "status 1"),
            (Fixtures.shell("garbage.sh"), .originalError, "not the protocol"),
            (Fixtures.python("exit0"), .originalError, "without calling the content handler"),
            (#"{"kind":"exec","path":"/nonexistent/extension"}"#, .originalError, "could not start"),
        ]
        for (configuration, outcome, reason) in cases {
            let push = TestPush(configuration)
            let run = harness.run(push)
            let result = try run.wait()
            #expect(result.outcome == outcome, "\(configuration): \(result.timeline)")
            #expect(result.content == push.original)
            #expect(result.timeline.contains { ($0.detail ?? "").contains(reason) }, "\(result.timeline)")
            #expect(run.elapsedMilliseconds < 3000)
        }
        #expect(waitUntil { harness.runtime.processCount == 0 })
    }

    /// exit 1 with stderr: the stderr line is in the timeline.
    @Test func stderrLogAndUnknownMessagesAreNoted() throws {
        let harness = try RuntimeHarness()
        let result = try harness.result(TestPush(Fixtures.python("stderr")))
        #expect(result.outcome == .processed)
        #expect(result.details(.stderr) == ["line one", "line two"])
        #expect(result.details(.log) == ["hello from the log"])
        #expect(result.has(.outputIgnored, containing: "mystery"))
        let failed = try harness.result(TestPush(Fixtures.shell("exit1.sh")))
        #expect(failed.details(.stderr) == ["cannot decrypt"])
    }

    /// A process over its memory limit is killed like jetsam: `original-crash`, noted.
    @Test func memoryHogIsKilled() throws {
        let harness = try RuntimeHarness()
        let run = harness.run(TestPush(Fixtures.python("memory", budgetMs: 10_000, memoryLimitMB: 64)))
        let result = try run.wait()
        #expect(result.outcome == .originalCrash)
        #expect(result.has(.memoryExceeded, containing: "over the 64 MiB limit"))
        #expect(run.elapsedMilliseconds < 5000)
        #expect(!result.has(.timeWillExpire))
        #expect(waitUntil { harness.runtime.processCount == 0 })
    }

    /// Content without title, subtitle and body shows the original.
    @Test func contentWithoutAlertShowsTheOriginal() throws {
        let harness = try RuntimeHarness()
        let push = TestPush(Fixtures.python("no-alert"))
        let result = try harness.result(push)
        #expect(result.outcome == .originalNoAlert)
        #expect(result.content == push.original)
    }

    /// A second content message is ignored and noted, whether it comes at once or a little later.
    @Test func secondContentIsIgnoredAndNoted() throws {
        let harness = try RuntimeHarness()
        for mode in ["twice", "twice-late"] {
            let run = harness.run(TestPush(Fixtures.python(mode)))
            let result = try run.wait()
            #expect(result.outcome == .processed)
            #expect(result.content.title == "first")
            #expect(result.has(.handlerIgnored), "\(mode): \(result.timeline)")
            #expect(run.calls == 1)
        }
    }

    /// Attachments: files in the instance's directory or the app group are moved into the store; files
    /// outside (directly, through a symlink or `..`), of the wrong type, too large or remote are dropped.
    @Test func attachmentsAreValidatedAndMoved() throws {
        let harness = try RuntimeHarness()
        let outside = harness.data.path + "/outside.png"
        try Data(Fixtures.png).write(to: URL(fileURLWithPath: outside))
        let push = TestPush(#"{"kind":"exec","path":"python3","arguments":["\#(Fixtures.path("nse.py"))","attach","\#(outside)"]}"#)
        let result = try harness.result(push)
        #expect(result.outcome == .processed, "\(result.timeline)")
        let accepted = result.content.attachments
        #expect(accepted.map(\.identifier) == ["image", "relative", "group"])
        #expect(accepted.first == Attachment(identifier: "image", type: "image/png", size: Fixtures.png.count,
                                             path: push.apnsID + "/" + push.token + "/image.png"))
        #expect(accepted.last?.type == "image/gif")
        for attachment in accepted {
            #expect(FileManager.default.fileExists(atPath: harness.attachmentsRoot + "/" + attachment.path))
        }
        let dropped = result.details(.attachmentDropped)
        for (identifier, reason) in [("fake", "unsupported type"), ("big", "over the image limit"),
                                     ("symlink", "outside"), ("dotdot", "outside"), ("outside", "outside"),
                                     ("remote", "not a file URL")] {
            #expect(dropped.contains { $0.hasPrefix("\"\(identifier)\"") && $0.contains(reason) }, "\(identifier): \(dropped)")
        }
        #expect(FileManager.default.fileExists(atPath: outside))  // never moved
        #expect(!FileManager.default.fileExists(atPath: harness.appGroup(push) + "/shared.gif"))  // moved away
    }

    /// Concurrent exec instances each see only their own directory; the app group is shared on purpose.
    @Test func concurrentProcessesDoNotShareState() throws {
        let harness = try RuntimeHarness()
        var pushes: [TestPush] = []
        for _ in 0..<6 {
            var push = TestPush(Fixtures.python("state", extra: ["0.3"]))
            push.apnsID = UUID().uuidString.lowercased()
            pushes.append(push)
        }
        try FileManager.default.createDirectory(atPath: harness.appGroup(pushes[0]), withIntermediateDirectories: true)
        let runs = pushes.map { harness.run($0) }
        let results = try runs.map { try $0.wait() }
        for result in results {
            #expect(result.outcome == .processed)
            let files = (result.content.body ?? "").split(separator: ",").map(String.init)
            #expect(files == [result.content.subtitle ?? "?"], "\(files)")
        }
        #expect(Set(results.compactMap(\.content.subtitle)).count == 6)
        let log = try String(contentsOfFile: harness.appGroup(pushes[0]) + "/log.txt", encoding: .utf8)
        #expect(Set(log.split(separator: "\n").map(String.init)) == Set(pushes.map(\.apnsID)))
    }

    /// `shutdown()` ends running instances with the original (`original-error`) and kills their processes;
    /// later runs end the same way at once.
    @Test func shutdownEndsEverything() throws {
        let harness = try RuntimeHarness()
        let running = harness.run(TestPush(Fixtures.python("never", budgetMs: 30_000)))
        #expect(waitUntil { harness.runtime.processCount == 1 })
        harness.runtime.shutdown()
        let result = try running.wait(seconds: 5)
        #expect(result.outcome == .originalError)
        #expect(result.has(.error, containing: "shutting down"))
        #expect(waitUntil { harness.runtime.processCount == 0 })
        let later = try harness.result(TestPush(Fixtures.python("processed")), seconds: 5)
        #expect(later.outcome == .originalError)
    }

    /// A plain shell script works as an extension too.
    @Test func shellExtension() throws {
        let harness = try RuntimeHarness()
        let result = try harness.result(TestPush(Fixtures.shell("content.sh")))
        #expect(result.outcome == .processed)
        #expect(result.content.title == "From sh" && result.content.body == "fixed")
        #expect(result.content.userInfoJSON == "{}")
    }

    /// A burst: every instance is answered, and one that waited for a process launcher noted it before
    /// `extension-started` (its budget starts once a launcher is about to spawn it, not while it waits).
    @Test func burstWaitsForLaunchersBeforeDidReceive() throws {
        let harness = try RuntimeHarness { $0.launcherCount = 1 }
        let runs = (0..<200).map { _ in harness.run(TestPush(Fixtures.shell("content.sh", budgetMs: 30_000))) }
        let results = try runs.map { try $0.wait(seconds: 60) }
        for result in results {
            #expect(result.outcome == .processed, "\(result.timeline)")
            let steps = result.timeline.map(\.step)
            if let queued = steps.firstIndex(of: ExtensionTimelineStep.queued.rawValue) {
                #expect(queued < (steps.firstIndex(of: ExtensionTimelineStep.started.rawValue) ?? -1), "\(steps)")
            }
        }
        #expect(results.contains { $0.has(.queued, containing: "process launcher") })
        #expect(waitUntil { harness.runtime.processCount == 0 && harness.runtime.waitingInstanceCount == 0 })
    }

    /// `shutdown()` while instances wait for a launcher, are being spawned or run: each ends once with the
    /// original, and no process outlives it.
    @Test func shutdownDuringABurstEndsEveryInstance() throws {
        let harness = try RuntimeHarness { $0.launcherCount = 1 }
        let sleeper = #"{"kind":"exec","path":"/bin/sh","arguments":["-c","read -r request; exec sleep 30"]}"#
        let runs = (0..<40).map { _ in harness.run(TestPush(sleeper)) }
        #expect(waitUntil { harness.runtime.processCount >= 1 })
        harness.runtime.shutdown()
        for run in runs {
            let result = try run.wait(seconds: 10)
            #expect(result.outcome == .originalError)
            #expect(run.calls == 1)
        }
        #expect(waitUntil { harness.runtime.processCount == 0 && harness.runtime.waitingInstanceCount == 0 })
    }

    /// `timeWillExpire` that comes before the process is spawned is still delivered (after the request). Sandbox
    /// time (a manual clock): the budget ends before Python has started and the grace never does, however long
    /// the start takes (on the real clock a 10 s grace was once too little while the whole suite ran on 2 cores).
    @Test func expiryBeforeTheSpawnIsDelivered() throws {
        let clock = ManualClock()
        let harness = try RuntimeHarness(clock: clock)
        let run = harness.run(TestPush(Fixtures.python("expire", budgetMs: 1, graceMs: 10_000)))
        #expect(waitUntil(seconds: 30) { clock.pendingTaskCount == 1 })  // the budget
        clock.advance(byMilliseconds: 1)
        let result = try run.wait(seconds: TestTime.seconds(60))
        #expect(result.outcome == .bestAttempt, "\(result.timeline)")
        #expect(result.content.title == "[late] Secret")
    }
}
