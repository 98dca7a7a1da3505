// APNs Sandbox — the guardian: kills the extension process groups it knows the moment the server is gone.
import Foundation
import Glibc
import Testing

@testable import ExtensionRuntime

@Suite struct ProcessGuardianTests {
    /// When the guardian's pipe closes (to it, the server is gone), it kills the groups the children told it
    /// about themselves: the shell and its `sleep`, which no PDEATHSIG reaches. Then it exits. It has a
    /// session of its own, so signals aimed at the server's group or terminal miss it.
    @Test func killsKnownGroupsWhenTheServerGoes() throws {
        let directory = try TemporaryDirectory()
        var guardian: ProcessGuardian? = ProcessGuardian()
        let shell = try ChildProcess.spawn(
            executable: "/bin/sh", arguments: ProcessRegistryTests.shellWithChild, environment: [:],
            directory: directory.path, guardian: try #require(guardian).descriptor())
        defer { ProcessTesting.close(shell) }
        let pid = try #require(guardian?.pid)
        let sleeper = try ProcessRegistryTests.grandchild(of: shell)
        // The guardian calls setsid() right after its fork; on a loaded machine this may run first.
        #expect(waitUntil { ProcessStatus(pid: pid)?.group == pid })

        guardian = nil  // closes the pipe and reaps the guardian
        #expect(ProcessStatus(pid: pid) == nil)
        #expect(waitUntil { ProcessTesting.isDead(sleeper.pid, startedAt: sleeper.start) })
        #expect(ProcessTesting.reap(shell.pid, within: 5) == .signaled(SIGKILL))
    }

    /// A group given back (reaped, ``ProcessGuardian/forget(_:)``) is not killed when the pipe closes.
    @Test func forgottenGroupsAreLeftAlone() throws {
        let directory = try TemporaryDirectory()
        var guardian: ProcessGuardian? = ProcessGuardian()
        let shell = try ChildProcess.spawn(
            executable: "/bin/sh", arguments: ProcessRegistryTests.shellWithChild, environment: [:],
            directory: directory.path, guardian: try #require(guardian).descriptor())
        defer {
            ChildProcess.killGroup(shell.pid)
            _ = ProcessTesting.reap(shell.pid, within: 5)
            ProcessTesting.close(shell)
        }
        let sleeper = try ProcessRegistryTests.grandchild(of: shell)
        guardian?.forget(shell.pid)
        guardian = nil
        usleep(200_000)
        #expect(!ProcessTesting.isDead(sleeper.pid, startedAt: sleeper.start))
        var status: Int32 = 0
        #expect(waitpid(shell.pid, &status, WNOHANG) == 0)
    }

    /// A guardian that was killed is replaced on the next spawn and told about every process still live.
    @Test func aKilledGuardianIsReplacedAndToldWhatLives() throws {
        let directory = try TemporaryDirectory()
        var guardian: ProcessGuardian? = ProcessGuardian()
        let live = try ChildProcess.spawn(
            executable: "/bin/sh", arguments: ProcessRegistryTests.shellWithChild, environment: [:],
            directory: directory.path, guardian: try #require(guardian).descriptor())
        defer { ProcessTesting.close(live) }
        guardian?.registered(live.pid, start: try #require(ProcessStatus(pid: live.pid)?.startTime))
        let sleeper = try ProcessRegistryTests.grandchild(of: live)

        let first = try #require(guardian?.pid)
        kill(first, SIGKILL)
        #expect(waitUntil { ProcessStatus(pid: first)?.isZombie ?? true })
        _ = guardian?.descriptor()
        let second = try #require(guardian?.pid)
        #expect(second != first)

        guardian = nil
        #expect(waitUntil { ProcessTesting.isDead(sleeper.pid, startedAt: sleeper.start) })
        #expect(ProcessTesting.reap(live.pid, within: 5) == .signaled(SIGKILL))
    }
}
