// APNs Sandbox — sampling an exec extension's memory: only processes that run their own program.
import Foundation
import Glibc
import Testing

@testable import ExtensionRuntime

@Suite(.serialized) struct ProcessMemoryTests {
    /// Fields are read after the last `)`: a command name may hold spaces and parentheses.
    @Test func statLineIsParsed() throws {
        func status(flags: UInt64) -> ProcessStatus? {
            let line = "4242 (a (b)) c) S 41 42 42 0 -1 \(flags) 0 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10"
            return ProcessStatus(statLine: Array(line.utf8))
        }
        let executed = try #require(status(flags: 0x40_0000))
        #expect(executed.parent == 41 && executed.startTime == 987_654 && executed.hasExecuted)
        #expect(status(flags: 0x40_0040)?.hasExecuted == false)
        #expect(ProcessStatus(statLine: Array("4242 (short) S 1 2".utf8)) == nil)
        #expect(ProcessStatus(pid: getpid())?.hasExecuted == true)
    }

    /// Regression (issue #5: a `dash` script sampled at 83 MiB, the server's own size, and killed): a
    /// process that has not exec'd since it was forked still shows its parent's memory, so it is never
    /// sampled as a root. Here a real one: python3 fills 128 MiB, forks, and the child only sleeps.
    @Test func aProcessThatHasNotExecutedIsNotSampled() throws {
        let script = """
            import os, sys, time
            hog = bytearray(128 << 20)
            for i in range(0, len(hog), 4096): hog[i] = 1
            child = os.fork()
            if child == 0:
                time.sleep(60); os._exit(0)
            print(child, flush=True)
            time.sleep(60)
            """
        let directory = try TemporaryDirectory()
        let process = try ChildProcess.spawn(
            executable: try ChildProcess.resolve("python3", searchPath: "/usr/local/bin:/usr/bin:/bin"),
            arguments: ["-c", script], environment: ["PATH": "/usr/local/bin:/usr/bin:/bin"],
            directory: directory.path)
        defer {
            ChildProcess.killGroup(process.pid)
            var status: Int32 = 0
            waitpid(process.pid, &status, 0)
            for fd in [process.stdin, process.stdout, process.stderr] { close(fd) }
        }
        let forked = try #require(Self.readLine(process.stdout).flatMap { pid_t($0) }, "no pid from python3")

        let child = try #require(ProcessStatus(pid: forked))
        #expect(!child.hasExecuted)
        #expect(child.parent == process.pid)
        // The old sampler read the fork's statm here: 128 MiB that belong to its parent.
        #expect(ProcessMemory.residentBytes(ofTreeAt: forked) == nil)

        // The exec'd parent is sampled, with its forked child as a descendant.
        #expect(ProcessStatus(pid: process.pid)?.hasExecuted == true)
        let tree = try #require(ProcessMemory.residentBytes(ofTreeAt: process.pid))
        #expect(tree >= 128 << 20)
    }

    /// A pid that names no process is not sampled.
    @Test func aMissingProcessIsNotSampled() {
        #expect(ProcessMemory.residentBytes(ofTreeAt: 0x7FFF_FFF0) == nil)
        #expect(ProcessStatus(pid: 0x7FFF_FFF0) == nil)
    }

    /// The first line written on a non-blocking pipe (polls up to 10 s).
    static func readLine(_ fd: Int32) -> String? {
        var collected: [UInt8] = []
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            _ = poll(&descriptor, 1, 100)
            var chunk = [UInt8](repeating: 0, count: 256)
            let n = read(fd, &chunk, chunk.count)
            if n == 0 { break }
            if n > 0 { collected += chunk[0..<n] }
            if let newline = collected.firstIndex(of: UInt8(ascii: "\n")) {
                return String(decoding: collected[..<newline], as: UTF8.self)
            }
        }
        return nil
    }
}
