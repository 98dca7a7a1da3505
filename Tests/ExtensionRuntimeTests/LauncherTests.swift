// APNs Sandbox — the exec launcher: a bounded number of tickets, handed out in order.
import APNsProtocol
import Dispatch
import Foundation
import Glibc
import Synchronization
import TestProcessSupport
import Testing

@testable import ExtensionRuntime
import Support

@Suite struct LauncherTests {
    /// Tickets are spread over the threads, never more than `ticketsPerQueue` on one; the rest wait in
    /// order and get a ticket as soon as one is given back.
    @Test func ticketsAreBoundedAndHandedOutInOrder() throws {
        let launcher = Launcher(queues: 2, ticketsPerQueue: 2)
        let granted = Locked<[(call: Int, ticket: Launcher.Ticket, waited: Bool)]>([])
        for call in 0..<10 {
            launcher.reserve { ticket, waited in granted.withLock { $0.append((call, ticket, waited)) } }
        }
        let first = granted.withLock { $0 }
        #expect(first.map(\.call) == [0, 1, 2, 3])
        #expect(first.allSatisfy { !$0.waited })
        #expect(Set(first.map { ObjectIdentifier($0.ticket.thread) }).count == 2)
        #expect(launcher.waitingCount == 6)

        first[1].ticket.release()
        #expect(waitUntil { granted.withLock { $0.count } == 5 })
        let fifth = try #require(granted.withLock { $0.last })
        #expect(fifth.call == 4 && fifth.waited)
        #expect(fifth.ticket.thread === first[1].ticket.thread)  // the ticket given back, on its thread

        for entry in granted.withLock({ $0 }) where entry.call != 1 { entry.ticket.release() }
        #expect(waitUntil { granted.withLock { $0.count } == 9 })
        #expect(Set(granted.withLock { $0.map(\.call) }) == Set(0..<9))
        #expect(launcher.waitingCount == 1)
    }

    /// A waiter that gives its ticket back at once (an instance that ended while waiting) passes it on
    /// without recursion, however many are in line.
    @Test func ticketsGivenBackAtOncePassAlong() {
        let launcher = Launcher(queues: 1, ticketsPerQueue: 1)
        let held = Locked<Launcher.Ticket?>(nil)
        launcher.reserve { ticket, _ in held.withLock { $0 = ticket } }
        let passed = Atomic<Int>(0)
        for _ in 0..<20_000 {
            launcher.reserve { ticket, _ in
                passed.add(1, ordering: .relaxed)
                ticket.release()
            }
        }
        held.withLock { $0 }?.release()
        #expect(waitUntil(seconds: 30) { passed.load(ordering: .relaxed) == 20_000 })
        #expect(launcher.waitingCount == 0)
    }

    /// An extension outlives its launcher going idle for longer than Dispatch keeps an idle worker thread
    /// (5 s in libdispatch on Linux): its process was spawned, with PDEATHSIG, by a launcher thread that
    /// is still there afterwards, and its late answer is shown.
    @Test(.scaledTimeLimit(minutes: 1)) func extensionOutlivesAnIdleLauncher() throws {
        let harness = try RuntimeHarness { $0.launcherCount = 1 }
        let pidFile = harness.data.path + "/extension.pid"
        let script = "read -r request; echo $$ > \"$OUT.tmp\"; mv \"$OUT.tmp\" \"$OUT\"; sleep 8; "
            + #"echo '{"type":"content","content":{"title":"late","body":"still here"}}'"#
        let configuration = JSON.object([
            ("kind", .string("exec")), ("path", .string("/bin/sh")), ("arguments", .array([.string("-c"), .string(script)])),
            ("environment", .object([("OUT", .string(pidFile))])), ("budgetMs", .number(30_000)),
        ]).serialized
        let run = harness.run(TestPush(configuration))
        #expect(waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: pidFile) })
        let pid = try #require(pid_t(try String(contentsOfFile: pidFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let spawner = try #require(Self.thread(thatSpawned: pid), "no thread of ours lists \(pid) as its child")
        let name = try String(contentsOfFile: "/proc/self/task/\(spawner)/comm", encoding: .utf8)
        #expect(name.hasPrefix("nse-launcher-0"), "spawned on \(name)")

        let result = try run.wait(seconds: 30)
        #expect(result.outcome == .processed, "\(result.timeline)")
        #expect(result.content.body == "still here")
        #expect(FileManager.default.fileExists(atPath: "/proc/self/task/\(spawner)"), "the launcher thread lives on")
    }

    /// The thread of this process whose children include `pid` (the kernel lists children per thread).
    static func thread(thatSpawned pid: pid_t) -> Int? {
        for task in FileSystem.entries(of: "/proc/self/task") ?? [] {
            guard let text = try? String(contentsOfFile: "/proc/self/task/\(task)/children", encoding: .utf8)
            else { continue }
            if text.split(separator: " ").contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "\(pid)" }) {
                return Int(task)
            }
        }
        return nil
    }
}
