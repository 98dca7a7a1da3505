// APNs Sandbox — spawning an exec extension: PDEATHSIG, and failures named by their step.
import Foundation
import Glibc
import Synchronization
import Testing

@testable import ExtensionRuntime

@Suite struct ChildProcessTests {
    /// A child dies with SIGKILL as soon as the thread that spawned it exits: PR_SET_PDEATHSIG is set, to
    /// SIGKILL, and (the trap the launcher avoids) it fires on the thread's exit, not only the process's.
    @Test func childDiesWhenItsSpawningThreadExits() throws {
        let directory = try TemporaryDirectory()
        let box = SpawnBox()
        let thread = Thread {
            box.set(Result {
                try ChildProcess.spawn(executable: "/bin/sleep", arguments: ["60"], environment: [:],
                                       directory: directory.path)
            })
        }
        thread.start()
        #expect(waitUntil { box.result != nil })
        let child = try #require(box.result).get()
        defer { ProcessTesting.close(child) }
        // The thread has returned; once the kernel has let it go, the child gets its PDEATHSIG.
        let status = ProcessTesting.reap(child.pid, within: 10)
        #expect(status == .signaled(SIGKILL), "\(String(describing: status))")
    }

    /// While the spawning thread lives, so does the child.
    @Test func childLivesWhileItsSpawningThreadDoes() throws {
        let directory = try TemporaryDirectory()
        let child = try ChildProcess.spawn(executable: "/bin/sleep", arguments: ["60"], environment: [:],
                                           directory: directory.path)
        defer {
            ChildProcess.killGroup(child.pid)
            _ = ProcessTesting.reap(child.pid, within: 10)
            ProcessTesting.close(child)
        }
        usleep(200_000)
        var status: Int32 = 0
        #expect(waitpid(child.pid, &status, WNOHANG) == 0)
        // Its own process group.
        #expect(ProcessStatus(pid: child.pid)?.group == child.pid)
    }

    /// A missing working directory and a missing program are errors that say which (the child is reaped).
    @Test func failuresNameTheirStep() throws {
        let directory = try TemporaryDirectory()
        #expect {
            try ChildProcess.spawn(executable: "/bin/true", arguments: [], environment: [:],
                                   directory: directory.path + "/missing")
        } throws: { "\($0)".contains("chdir") && "\($0)".contains("No such file") }
        #expect {
            try ChildProcess.spawn(executable: "/nonexistent/program", arguments: [], environment: [:],
                                   directory: directory.path)
        } throws: { "\($0)".hasPrefix("/nonexistent/program: No such file") }
    }
}
