// APNs Sandbox — child processes for the tests, started with posix_spawn instead of Foundation's Process.
//
// Why not Foundation.Process: on Swift 6.3.1 for Linux, Process.run() reads /proc/self/fd with a
// 256-byte copy of each dirent and crashes (SIGSEGV in memcpy) when a record ends a page
// (swift-corelibs-foundation#5472, fixed after 6.3.1). The more file descriptors a process has open, the
// likelier it is; the test binary runs many servers at once and crashed in about 1 run in 3.
import Foundation
import Glibc
import Synchronization
import Support

/// A child process started with `posix_spawn`: standard streams from or to files, pipes or /dev/null,
/// every other descriptor closed in the child, reaped by a thread of its own.
///
/// `@unchecked Sendable`: every stored property is immutable except the exit state behind its `Mutex`.
public final class SpawnedProcess: @unchecked Sendable {
    /// Where a standard stream goes.
    public enum Stream {
        case null
        /// A file: read for stdin; created (truncated) for stdout and stderr.
        case file(String)
        /// A pipe whose other end is ``stdinPipe``, ``stdoutPipe`` or ``stderrPipe``.
        case pipe
        /// stderr only: wherever stdout goes.
        case stdout
    }

    public let pid: pid_t
    /// The parent's ends of the pipes asked for (close them when done; the reaper does not).
    public let stdinPipe: Int32?
    public let stdoutPipe: Int32?
    public let stderrPipe: Int32?
    private let exited = DispatchSemaphore(value: 0)
    /// Whether the child was reaped, and its wait status.
    private final class Exit: Sendable {
        let state = Locked<(done: Bool, status: Int32)>((false, 0))
    }

    private let exit = Exit()

    /// Starts `executable` (a path, or a name looked up in `PATH`).
    /// - Parameters:
    ///   - environment: The whole environment; nil inherits this process's.
    ///   - directory: The child's working directory; nil inherits.
    public init(
        _ executable: String, arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null
    ) throws {
        let path = try Self.resolve(executable)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let file):
                let flags = target == 0 ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC)
                posix_spawn_file_actions_addopen(&actions, target, file, flags, 0o644)
            case .stdout:
                posix_spawn_file_actions_adddup2(&actions, 1, target)
            case .pipe:
                var fds: [Int32] = [0, 0]
                guard pipe(&fds) == 0 else { throw SpawnError("pipe: \(errno)") }
                for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                let (childEnd, parentEnd) = target == 0 ? (fds[0], fds[1]) : (fds[1], fds[0])
                posix_spawn_file_actions_adddup2(&actions, childEnd, target)
                childEnds.append(childEnd)
                parentEnds[Int(target)] = parentEnd
            }
        }
        if let addCloseFrom = Self.addCloseFrom { _ = addCloseFrom(&actions, 3) }
        if let directory {
            guard let addChdir = Self.addChdir else { throw SpawnError("no posix_spawn_file_actions_addchdir_np") }
            _ = addChdir(&actions, directory)
        }
        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, nil, argv, envp)
        guard status == 0 else {
            for case let fd? in parentEnds { close(fd) }
            throw SpawnError("posix_spawn \(path): \(String(cString: strerror(status)))")
        }
        pid = child
        stdinPipe = parentEnds[0]
        stdoutPipe = parentEnds[1]
        stderrPipe = parentEnds[2]
        let exited = self.exited
        let exit = self.exit
        let spawned = child
        Thread {
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) < 0 && errno == EINTR {}
            exit.state.withLock { $0 = (true, status) }
            exited.signal()
        }.start()
    }

    /// Whether the child has not been reaped yet.
    public var isRunning: Bool { !exit.state.withLock { $0.done } }

    /// Signals the child while it is unreaped (never a reused pid).
    public func send(signal: Int32) {
        exit.state.withLock { state in
            if !state.done { kill(pid, signal) }
        }
    }

    /// Waits up to `timeout` seconds; the exit status (or the signal number) once exited, else nil.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        exited.signal()  // later waits return at once too
        return terminationStatus
    }

    /// The exit status, or the signal number when ``wasSignaled``.
    public var terminationStatus: Int32 {
        let status = exit.state.withLock { $0.status }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    public var wasSignaled: Bool {
        let status = exit.state.withLock { $0.status }
        return (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
    }

    public static func resolve(_ executable: String) throws -> String {
        if executable.contains("/") { return executable }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(executable)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw SpawnError("\(executable) not found in PATH")
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    private static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }
    private static let addChdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: AddChdir.self)
    }

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)  // RTLD_DEFAULT
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a program to completion and returns its exit status and standard output (stderr as asked).
public func runToCompletion(
    _ executable: String, arguments: [String], stderr: SpawnedProcess.Stream = .null
) throws -> (status: Int32, output: Data) {
    let child = try SpawnedProcess(executable, arguments: arguments, stdout: .pipe, stderr: stderr)
    guard let fd = child.stdoutPipe else { throw SpawnError("no stdout pipe") }
    let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    let data = handle.readDataToEndOfFile()
    child.wait(timeout: .infinity)
    return (child.terminationStatus, data)
}
