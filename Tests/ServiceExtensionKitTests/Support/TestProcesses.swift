// APNs Sandbox — ServiceExtensionKit tests: child processes, a local HTTP server, fixtures.

import Foundation
import TestProcessSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A 1×1 PNG.
let tinyPNG = Data(
    base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!

let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

func makeTemporaryDirectory(_ label: String = "sek") throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.resolvingSymlinksInPath()
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// A child process with piped stdin/stdout/stderr, read on background threads. Started with posix_spawn
/// (``SpawnedProcess``), not Foundation's Process, whose `run()` crashes now and then on this toolchain.
///
/// `@unchecked Sendable`: the output buffers are guarded by `lock`; `process` and the input handle are set in
/// `init` and only used through thread-safe calls afterwards.
final class ChildProcess: @unchecked Sendable {
    let process: SpawnedProcess
    private let input: FileHandle
    private let lock = NSLock()
    private var stdoutData = Data()
    private var stderrData = Data()
    private var readersDone = 0

    init(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        directory: URL? = nil
    ) throws {
        process = try SpawnedProcess(
            executable, arguments: arguments, environment: environment, directory: directory?.path,
            stdin: .pipe, stdout: .pipe, stderr: .pipe)
        guard let stdin = process.stdinPipe, let stdout = process.stdoutPipe, let stderr = process.stderrPipe else {
            throw TestFailure("no pipes")
        }
        input = FileHandle(fileDescriptor: stdin, closeOnDealloc: true)
        startReading(FileHandle(fileDescriptor: stdout, closeOnDealloc: true), isStdout: true)
        startReading(FileHandle(fileDescriptor: stderr, closeOnDealloc: true), isStdout: false)
    }

    private func startReading(_ handle: FileHandle, isStdout: Bool) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                lock.withLock {
                    if chunk.isEmpty {
                        readersDone += 1
                    } else if isStdout {
                        stdoutData.append(chunk)
                    } else {
                        stderrData.append(chunk)
                    }
                }
                if chunk.isEmpty { return }
            }
        }
        thread.start()
    }

    var pid: Int32 { process.pid }

    var stdoutText: String { lock.withLock { String(decoding: stdoutData, as: UTF8.self) } }
    var stderrText: String { lock.withLock { String(decoding: stderrData, as: UTF8.self) } }

    /// Complete stdout lines so far.
    var stdoutLines: [String] {
        let text = stdoutText
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // the part after the last newline (usually empty)
        return lines.filter { !$0.isEmpty }
    }

    func send(_ line: String) throws {
        try input.write(contentsOf: Data((line + "\n").utf8))
    }

    func closeInput() throws {
        try input.close()
    }

    /// Waits for a stdout line for which `matches` is true.
    func waitForStdoutLine(timeout: Double, where matches: (String) -> Bool = { _ in true }) -> String? {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if let line = stdoutLines.first(where: matches) { return line }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return stdoutLines.first(where: matches)
    }

    /// Waits for stderr to contain `text`.
    func waitForStderr(containing text: String, timeout: Double) -> Bool {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if stderrText.contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return stderrText.contains(text)
    }

    /// The exit status, or nil if it is still running after `timeout`.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = monotonicSeconds() + timeout
        while process.isRunning && monotonicSeconds() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        if process.isRunning { return nil }
        // Let the readers drain what the process wrote before it exited.
        let drainDeadline = monotonicSeconds() + 2
        while lock.withLock({ readersDone }) < 2 && monotonicSeconds() < drainDeadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        return process.terminationStatus
    }

    /// The resident memory (VmRSS) in kilobytes, while it runs.
    var residentKilobytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }

    func kill() {
        process.send(signal: SIGKILL)
        _ = waitForExit(timeout: 5)
    }
}

/// `python3 -m http.server` on 127.0.0.1 (a free port) serving `directory`.
final class StaticHTTPServer: Sendable {
    let child: ChildProcess
    let port: Int

    init(directory: URL) throws {
        child = try ChildProcess(
            "/usr/bin/env",
            arguments: ["python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", directory.path, "0"])
        guard
            let line = child.waitForStdoutLine(timeout: 10, where: { $0.contains("port ") }),
            let portText = line.components(separatedBy: "port ").last?.prefix(while: { $0.isNumber }),
            let port = Int(portText)
        else {
            child.kill()
            throw TestFailure("python3 -m http.server did not start: \(child.stdoutText) \(child.stderrText)")
        }
        self.port = port
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    func stop() { child.kill() }
}

/// A TCP port that accepts connections (the kernel's backlog) but never answers: a download that hangs.
final class HangingHTTPServer: Sendable {
    let child: ChildProcess
    let port: Int

    init() throws {
        let script = """
            import socket, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
            print(s.getsockname()[1], flush=True)
            time.sleep(300)
            """
        child = try ChildProcess("/usr/bin/env", arguments: ["python3", "-u", "-c", script])
        guard let line = child.waitForStdoutLine(timeout: 10), let port = Int(line) else {
            child.kill()
            throw TestFailure("the hanging server did not start: \(child.stderrText)")
        }
        self.port = port
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    func stop() { child.kill() }
}

/// AES-256-GCM in the example's layout — base64(nonce(12) | ciphertext | tag(16)) — made by Python's
/// `cryptography` package, an implementation independent of the example's OpenSSL code.
func sealWithPython(_ plaintext: String, key: Data) throws -> String {
    let script = """
        import base64, os, sys
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        key = base64.b64decode(sys.argv[1]); nonce = os.urandom(12)
        sealed = nonce + AESGCM(key).encrypt(nonce, sys.argv[2].encode(), None)
        print(base64.b64encode(sealed).decode())
        """
    let child = try ChildProcess(
        "/usr/bin/env", arguments: ["python3", "-c", script, key.base64EncodedString(), plaintext])
    guard child.waitForExit(timeout: 20) == 0, let line = child.stdoutLines.first else {
        throw TestFailure("python3 AESGCM failed: \(child.stderrText)")
    }
    return line
}

/// Parses a JSON object line.
func jsonObject(_ line: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
        throw TestFailure("not a JSON object: \(line)")
    }
    return object
}

/// One JSON line.
func jsonLine(_ object: [String: Any]) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

/// The directory of the test bundle (where SwiftPM also puts the package's executables and `Modules/`).
func buildProductsDirectory() -> URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
}

/// The built `ExampleNotificationService` next to the test bundle.
func exampleExecutable() throws -> String {
    var candidates = [buildProductsDirectory().appendingPathComponent("ExampleNotificationService").path]
    let bundle = Bundle.main.bundleURL.resolvingSymlinksInPath()
    candidates.append(bundle.appendingPathComponent("ExampleNotificationService").path)
    candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("ExampleNotificationService").path)
    if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
        return found
    }
    throw TestFailure(
        "ExampleNotificationService was not found (looked at \(candidates)); build it with "
            + "`swift build --build-tests` before `swift test`")
}
