// APNs Sandbox — no exec process outlives the server: the guardian, the ledger and the cleanup at start.
import Foundation
import Glibc
import Sandbox
import Support
import Testing

@testable import ExtensionRuntime

/// Real processes; serialized because a few tests look at every process of the machine.
@Suite(.serialized) struct ProcessRegistryTests {
    /// `sh -c 'sleep 60 & echo $!; wait'`: a child whose own child (the `sleep`) is no child of ours.
    static let shellWithChild = ["-c", "sleep 60 & echo $!; wait"]

    /// The grandchild's pid and start time, from the shell's first line.
    static func grandchild(of shell: ChildProcess) throws -> (pid: pid_t, start: UInt64) {
        let pid = try #require(ProcessTesting.firstLine(shell).flatMap { pid_t($0) }, "no pid from the shell")
        let start = try #require(ProcessStatus(pid: pid)?.startTime)
        return (pid, start)
    }

    /// A record lives from the spawn until the reap: the ledger lists a running instance's process (pid,
    /// start time, instance id) and is blank again once it ended.
    @Test func ledgerListsLiveProcessesOnly() throws {
        let harness = try RuntimeHarness()
        let ledger = harness.data.path + "/instances/" + ExtensionRuntime.ledgerName
        let hang = #"{"kind":"exec","path":"/bin/sh","arguments":["-c","read -r request; exec sleep 30"],"budgetMs":30000}"#
        let run = harness.run(TestPush(hang))
        #expect(waitUntil { ProcessRegistry.readLedger(ledger).count == 1 })
        let record = try #require(ProcessRegistry.readLedger(ledger).first)
        #expect(ProcessStatus(pid: record.pid)?.startTime == record.start)
        #expect(ProcessStatus(pid: record.pid)?.group == record.pid)
        // The spawn returns as the child leaves the server's memory; its new environment is set up a moment later.
        #expect(waitUntil {
            let environment = (try? String(contentsOfFile: "/proc/\(record.pid)/environ", encoding: .utf8)) ?? ""
            return environment.split(separator: "\0").contains("APNS_SANDBOX_INSTANCE=\(record.instance)")
        })

        harness.runtime.shutdown()
        _ = try run.wait()
        #expect(waitUntil { harness.runtime.processCount == 0 })
        #expect(ProcessRegistry.readLedger(ledger).isEmpty)
        let size = (try? FileManager.default.attributesOfItem(atPath: ledger)[.size] as? Int) ?? -1
        #expect(size == ProcessRegistry.recordSize, "one slot, blank again")
    }

    /// At start, a recorded leader that still runs with its recorded start time has its group killed; one
    /// whose start time differs (its pid now names another process) is left alone.
    @Test func leftoversAreKilledOnlyWhenTheStartTimeMatches() throws {
        let directory = try TemporaryDirectory()
        let ledger = directory.path + "/ledger"
        let shell = try ChildProcess.spawn(executable: "/bin/sh", arguments: Self.shellWithChild, environment: [:],
                                           directory: directory.path)
        defer { ProcessTesting.close(shell) }
        let sleeper = try Self.grandchild(of: shell)
        let start = try #require(ProcessStatus(pid: shell.pid)?.startTime)

        try Self.writeLedger(ledger, [(shell.pid, start + 1, "reused")])
        let spared = ProcessRegistry.killLeftovers(ledgerPath: ledger)
        #expect(spared == ProcessRegistry.LeftoverReport(records: 1, groupsKilled: 0, processesKilled: 0))
        var status: Int32 = 0
        #expect(waitpid(shell.pid, &status, WNOHANG) == 0, "a reused pid is never killed")
        #expect(!ProcessTesting.isDead(sleeper.pid, startedAt: sleeper.start))

        try Self.writeLedger(ledger, [(shell.pid, start, "ours")])
        let killed = ProcessRegistry.killLeftovers(ledgerPath: ledger)
        #expect(killed.groupsKilled == 1)
        #expect(ProcessTesting.reap(shell.pid, within: 5) == .signaled(SIGKILL))
        #expect(waitUntil { ProcessTesting.isDead(sleeper.pid, startedAt: sleeper.start) })
    }

    /// A leader that is gone (PDEATHSIG) leaves its children behind: they are found by the instance id in
    /// their environment and killed; a process of another instance is not.
    @Test func orphansAreFoundByTheirInstance() throws {
        let directory = try TemporaryDirectory()
        let ledger = directory.path + "/ledger"
        let id = "test-" + UUID().uuidString.lowercased()
        let leader = try ChildProcess.spawn(
            executable: "/bin/sh", arguments: ["-c", "sleep 60 & echo $!"],
            environment: ["APNS_SANDBOX_INSTANCE": id], directory: directory.path)
        defer { ProcessTesting.close(leader) }
        let orphan = try Self.grandchild(of: leader)
        let leaderStart = try #require(ProcessStatus(pid: leader.pid)?.startTime)
        #expect(ProcessTesting.reap(leader.pid, within: 5) == .exited(0))
        let decoy = try ChildProcess.spawn(
            executable: "/bin/sleep", arguments: ["60"], environment: ["APNS_SANDBOX_INSTANCE": id + "-other"],
            directory: directory.path)
        defer {
            ChildProcess.killGroup(decoy.pid)
            _ = ProcessTesting.reap(decoy.pid, within: 5)
            ProcessTesting.close(decoy)
        }

        try Self.writeLedger(ledger, [(leader.pid, leaderStart, id)])
        let report = ProcessRegistry.killLeftovers(ledgerPath: ledger)
        #expect(report == ProcessRegistry.LeftoverReport(records: 1, groupsKilled: 0, processesKilled: 1))
        #expect(waitUntil { ProcessTesting.isDead(orphan.pid, startedAt: orphan.start) })
        var status: Int32 = 0
        #expect(waitpid(decoy.pid, &status, WNOHANG) == 0, "another instance's process lives")
    }

    /// The runtime cleans up before anything else: a previous run's ledger in the data directory has its
    /// live groups killed when the runtime starts, and a fresh, empty ledger replaces it.
    @Test func runtimeKillsLeftoversWhenItStarts() throws {
        let data = try TemporaryDirectory()
        let instances = data.path + "/instances"
        try FileManager.default.createDirectory(atPath: instances, withIntermediateDirectories: true)
        let shell = try ChildProcess.spawn(executable: "/bin/sh", arguments: Self.shellWithChild, environment: [:],
                                           directory: data.path)
        defer { ProcessTesting.close(shell) }
        let sleeper = try Self.grandchild(of: shell)
        let start = try #require(ProcessStatus(pid: shell.pid)?.startTime)
        try Self.writeLedger(instances + "/" + ExtensionRuntime.ledgerName, [(shell.pid, start, "earlier-run-1")])

        let runtime = ExtensionRuntime(configuration: RuntimeConfiguration(dataDirectory: data.path),
                                       clock: SystemClock(), logger: Logger(label: "test", level: .error))
        runtime.start()
        #expect(ProcessTesting.reap(shell.pid, within: 5) == .signaled(SIGKILL))
        #expect(waitUntil { ProcessTesting.isDead(sleeper.pid, startedAt: sleeper.start) })
        #expect(ProcessRegistry.readLedger(instances + "/" + ExtensionRuntime.ledgerName).isEmpty)
        #expect(runtime.processCount == 0)
    }

    /// Records are 64-byte lines; blank and torn ones are skipped.
    @Test func ledgerRecordsRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/ledger"
        var bytes = ProcessRegistry.record(pid: 4242, start: 987_654, instance: "abc-def-1")
        bytes += [UInt8](repeating: UInt8(ascii: " "), count: 63) + [0x0A]
        bytes += Array("12 nonsense".utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 52) + [0x0A]
        bytes += Array("99 1".utf8)  // cut off
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(ProcessRegistry.readLedger(path) == [.init(pid: 4242, start: 987_654, instance: "abc-def-1")])
        #expect(ProcessRegistry.readLedger(directory.path + "/missing").isEmpty)
    }

    static func writeLedger(_ path: String, _ records: [(pid_t, UInt64, String)]) throws {
        let bytes = records.flatMap { ProcessRegistry.record(pid: $0.0, start: $0.1, instance: $0.2) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
