// APNs Sandbox — starting an exec extension: its own process group, three pipes, and death with the server.
//
// ExtensionRuntime imports one C target of ours, CProcess (Package.swift): PR_SET_PDEATHSIG must be set in
// the child between fork and exec, which posix_spawn cannot do, and only async-signal-safe C may run there.
// This file is its one Swift wrapper for spawning; ``ProcessGuardian`` wraps the guardian, and
// ``ProcessRegistry`` uses its pidfd and /proc helpers for the cleanup at start.
import CProcess
import Foundation
import Glibc

/// A spawned extension process: its pid (also its process group id) and the parent's pipe ends.
///
/// The caller owns the three descriptors (non-blocking, close-on-exec) and must close them; the process
/// must be reaped (``ProcessReactor`` does) and its ``registration`` given back to the registry then.
struct ChildProcess: Sendable {
    let pid: pid_t
    /// The write end of the child's standard input.
    let stdin: Int32
    /// The read end of the child's standard output.
    let stdout: Int32
    /// The read end of the child's standard error.
    let stderr: Int32
    /// Its durable record and guardian entry (``ProcessRegistry``), nil when it was spawned without one.
    var registration: ProcessRegistry.Registration?

    /// Starts `executable` with `arguments` in `directory` with exactly `environment`.
    ///
    /// The child gets its own process group (so the whole group can be killed), `PR_SET_PDEATHSIG(SIGKILL)`
    /// (it dies when the calling thread exits: call this only from a thread that lives as long as the
    /// runtime, ``Launcher``), an empty signal mask and default signal dispositions (the server blocks
    /// SIGTERM/SIGINT for its signalfd and ignores SIGPIPE; neither may leak into an extension), and no
    /// descriptors but 0, 1 and 2. With a `guardian` descriptor it registers its group there itself, before
    /// the program runs. Returns once the child has exec'd.
    /// - Throws: ``SpawnError`` when the pipes cannot be made or the program cannot be started.
    static func spawn(
        executable: String, arguments: [String], environment: [String: String], directory: String,
        guardian: Int32 = -1
    ) throws -> ChildProcess {
        let input = try Pipe.make()
        let output: (read: Int32, write: Int32)
        let errors: (read: Int32, write: Int32)
        do {
            output = try Pipe.make()
        } catch {
            Pipe.close(input)
            throw error
        }
        do {
            errors = try Pipe.make()
        } catch {
            Pipe.close(input)
            Pipe.close(output)
            throw error
        }
        // The parent's ends never reach the child: everything but 0, 1, 2 is close-on-exec there, and the
        // child's ends are dup2'd onto 0, 1, 2 (which clears close-on-exec on the copies).
        defer {
            Glibc.close(input.read)
            Glibc.close(output.write)
            Glibc.close(errors.write)
        }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        var failedStep: Int32 = 0
        let status = executable.withCString { path in
            directory.withCString { directory in
                argv.withUnsafeBufferPointer { argv in
                    envp.withUnsafeBufferPointer { envp in
                        var request = CProcess_spawn_request(
                            path: path, argv: argv.baseAddress, envp: envp.baseAddress, directory: directory,
                            stdin_fd: input.read, stdout_fd: output.write, stderr_fd: errors.write,
                            guardian_fd: guardian)
                        return CProcess_spawn(&request, &pid, &failedStep)
                    }
                }
            }
        }
        guard status == 0 else {
            Glibc.close(input.write)
            Glibc.close(output.read)
            Glibc.close(errors.read)
            let reason = String(cString: strerror(status))
            switch Int(failedStep) {
            case CProcess_step_chdir: throw SpawnError("chdir \(directory): \(reason)")
            case CProcess_step_execve, CProcess_step_none: throw SpawnError("\(executable): \(reason)")
            default: throw SpawnError("\(executable): \(Self.stepName(failedStep)): \(reason)")
            }
        }
        for fd in [input.write, output.read, errors.read] { setNonBlocking(fd) }
        return ChildProcess(pid: pid, stdin: input.write, stdout: output.read, stderr: errors.read)
    }

    private static func stepName(_ step: Int32) -> String {
        switch Int(step) {
        case CProcess_step_setpgid: "setpgid"
        case CProcess_step_pdeathsig: "prctl(PR_SET_PDEATHSIG)"
        case CProcess_step_dup2: "dup2"
        case CProcess_step_clone: "clone"
        case CProcess_step_pipe: "pipe"
        default: "spawn"
        }
    }

    /// The program to run for a configured `path`: absolute paths as they are, relative ones against the
    /// server's working directory, bare names looked up in `searchPath` (colon-separated).
    static func resolve(_ path: String, searchPath: String) throws -> String {
        if path.contains("/") {
            if path.hasPrefix("/") { return path }
            return FileManager.default.currentDirectoryPath + "/" + path
        }
        for directory in searchPath.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(path)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw SpawnError("\(path): not found in \(searchPath)")
    }

    /// Sends SIGKILL to the whole process group (no-op when it is gone).
    static func killGroup(_ pid: pid_t) {
        guard pid > 0 else { return }
        Glibc.kill(-pid, SIGKILL)
    }
}

/// A process could not be started.
struct SpawnError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// How a process ended, from a `waitpid` status.
enum ExitStatus: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    /// Decodes a raw `waitpid` status (the `WIFEXITED`/`WTERMSIG` macros do not import into Swift).
    init(waitStatus status: Int32) {
        let signal = status & 0x7F
        self = signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
    }

    var description: String {
        switch self {
        case .exited(let code): "exit status \(code)"
        case .signaled(let signal): "killed by signal \(signal) (\(Self.signalName(signal)))"
        }
    }

    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGKILL: "SIGKILL"
        case SIGABRT: "SIGABRT"
        case SIGBUS: "SIGBUS"
        case SIGILL: "SIGILL"
        case SIGFPE: "SIGFPE"
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGTRAP: "SIGTRAP"
        case SIGPIPE: "SIGPIPE"
        case SIGXCPU: "SIGXCPU"
        default: "signal \(signal)"
        }
    }
}

/// Pipes with both ends close-on-exec and the parent's ends non-blocking.
enum Pipe {
    /// A pipe whose descriptors are all 3 or higher (so that dup2 onto 0–2 always makes a copy).
    static func make() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        let made: Int32
        if let pipe2 = Glibc2.pipe2 {
            made = pipe2(&fds, O_CLOEXEC)
        } else {
            // Without pipe2 there is a window in which another thread's spawn could inherit these;
            // a spawned child still has them close on exec.
            made = Glibc.pipe(&fds)
        }
        guard made == 0 else { throw SpawnError("pipe: \(String(cString: strerror(errno)))") }
        for index in 0..<2 {
            if fds[index] < 3 {
                let moved = fcntl(fds[index], F_DUPFD_CLOEXEC, 3)
                Glibc.close(fds[index])
                fds[index] = moved
            } else {
                _ = fcntl(fds[index], F_SETFD, FD_CLOEXEC)
            }
        }
        guard fds[0] >= 0, fds[1] >= 0 else {
            close((fds[0], fds[1]))
            throw SpawnError("pipe: \(String(cString: strerror(errno)))")
        }
        return (fds[0], fds[1])
    }

    static func close(_ pipe: (read: Int32, write: Int32)) {
        if pipe.read >= 0 { Glibc.close(pipe.read) }
        if pipe.write >= 0 { Glibc.close(pipe.write) }
    }
}

/// glibc's `pipe2`, which the Swift `Glibc` module hides (declared only under `_GNU_SOURCE`), looked up once
/// with `dlsym`. It exists in every glibc since 2.9; without it the runtime falls back to `pipe` + `fcntl`.
private enum Glibc2 {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

    static let pipe2: Pipe2? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2")
        .map { unsafeBitCast($0, to: Pipe2.self) }
}

/// Makes the parent's end of a pipe non-blocking.
func setNonBlocking(_ fd: Int32) {
    let flags = fcntl(fd, F_GETFL)
    if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
}
