// APNs Sandbox — end-to-end test support: child processes (curl, python3, h2load, openssl, the binary).
import Foundation
import Glibc
import TestProcessSupport

/// What a finished child process left behind.
struct ProcessOutput: Sendable, CustomStringConvertible {
    var status: Int32
    /// Killed by a signal (status is the signal number), e.g. after a timeout.
    var signaled: Bool
    var timedOut: Bool
    var stdout: Data
    var stderr: Data

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }

    var description: String {
        "status \(status)\(signaled ? " (signal)" : "")\(timedOut ? " TIMED OUT" : "")\n"
            + "stdout: \(stdoutText.prefix(2000))\nstderr: \(stderrText.prefix(2000))"
    }
}

/// A child process whose standard output and error go to temporary files (no pipes, so nothing
/// can block on a full pipe or on a pipe end inherited by another child). Started with posix_spawn
/// (``SpawnedProcess``), not Foundation's Process, whose `run()` crashes now and then on this toolchain.
final class ChildProcess: @unchecked Sendable {
    private let child: SpawnedProcess
    private let directory: String

    /// Starts `executable` (a path, or a name looked up in `PATH`) with `arguments`.
    init(_ executable: String, arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws {
        directory = try makeTemporaryDirectory("apns-sandbox-child")
        var input = SpawnedProcess.Stream.null
        if let stdin {
            _ = FileManager.default.createFile(atPath: directory + "/stdin", contents: stdin)
            input = .file(directory + "/stdin")
        }
        child = try SpawnedProcess(
            executable, arguments: arguments,
            environment: environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } },
            stdin: input, stdout: .file(directory + "/stdout"), stderr: .file(directory + "/stderr"))
    }

    deinit {
        send(signal: SIGKILL)
        try? FileManager.default.removeItem(atPath: directory)
    }

    var pid: Int32 { child.pid }

    /// Signals the child if it is still running (never a reaped, possibly reused pid).
    func send(signal: Int32) {
        child.send(signal: signal)
    }

    /// Waits up to `timeout` seconds for the child to exit; its status, or nil if still running.
    func wait(timeout: Double) -> Int32? {
        child.wait(timeout: timeout)
    }

    /// Waits up to `timeout` (times ``TestTime/scale``); kills the child if it is still running then.
    func finish(timeout: Double) -> ProcessOutput {
        var timedOut = false
        if wait(timeout: TestTime.seconds(timeout)) == nil {
            timedOut = true
            send(signal: SIGKILL)
            _ = wait(timeout: 10)
        }
        return ProcessOutput(
            status: child.terminationStatus, signaled: child.wasSignaled,
            timedOut: timedOut,
            stdout: FileManager.default.contents(atPath: directory + "/stdout") ?? Data(),
            stderr: FileManager.default.contents(atPath: directory + "/stderr") ?? Data())
    }

    /// Standard output so far (the child may still be running).
    var currentStdout: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/stdout") ?? Data(), as: UTF8.self)
    }

    /// Output so far (the child may still be running).
    var currentStderr: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/stderr") ?? Data(), as: UTF8.self)
    }
}

struct ProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a program to completion (killed after `timeout` seconds) and returns its status and output.
func run(
    _ executable: String, args: [String], stdin: Data? = nil, timeout: Double = 15,
    environment: [String: String]? = nil
) async throws -> ProcessOutput {
    try await offload {
        let child = try ChildProcess(executable, arguments: args, stdin: stdin, environment: environment)
        return child.finish(timeout: timeout)
    }
}

/// curl, silent but showing errors, bounded in time.
func curl(_ args: [String], stdin: Data? = nil) async throws -> ProcessOutput {
    try await run("/usr/bin/curl", args: ["-sS", "--max-time", "10"] + args, stdin: stdin)
}

/// A response as `curl -D -` (or `-i`) prints it: the last header block, then the body.
struct CurlResponse {
    var statusLine: String
    var status: Int
    var headers: [(name: String, value: String)]
    var body: Data

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }

    /// Splits curl's output; handles interim (1xx) header blocks before the final one.
    init?(_ output: Data) {
        var rest = Array(output)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            guard let end = rest.firstRange(of: separator) else { return nil }
            let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self)
            let lines = head.components(separatedBy: "\r\n")
            guard let first = lines.first, first.hasPrefix("HTTP/"),
                  let code = first.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
            rest = Array(rest[end.upperBound...])
            if (100..<200).contains(code) { continue }
            statusLine = first
            status = code
            headers = lines.dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            body = Data(rest)
            return
        }
    }
}
