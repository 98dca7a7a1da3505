// APNs Sandbox — ServiceExtensionKit: the one-line entry point that makes a subclass an `exec` extension.

import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a `UNNotificationServiceExtension` subclass as an APNs Sandbox `exec` extension
/// (docs/extension-protocol.md). The whole `main.swift` of an extension is:
///
/// ```swift
/// import ServiceExtensionKit
///
/// ServiceExtensionHost.run(NotificationService())
/// ```
public enum ServiceExtensionHost {
    /// Serves one notification and exits; never returns.
    ///
    /// 1. Reads the `request` line from standard input and sets ``ServiceExtensionEnvironment/current``.
    /// 2. Creates the extension (the autoclosure is evaluated once, after the request has arrived) and calls
    ///    `didReceive(_:withContentHandler:)` on a background thread.
    /// 3. On `{"type":"timeWillExpire"}` calls `serviceExtensionTimeWillExpire()` on another thread.
    /// 4. The first call of the content handler writes the `content` line and the process exits with status 0;
    ///    later calls are ignored. It also exits 0 when standard input closes first (the sandbox ended the
    ///    instance), and 2 if the request cannot be read.
    ///
    /// Standard output carries only protocol lines: anything the extension `print`s goes to standard error,
    /// which the sandbox records in the notification's timeline. The main thread runs `RunLoop.main`, so
    /// `DispatchQueue.main` and main-run-loop timers work as on iOS.
    ///
    /// - Parameter makeExtension: The extension to run, such as `NotificationService()`.
    public static func run(_ makeExtension: @autoclosure () -> UNNotificationServiceExtension) -> Never {
        signal(SIGPIPE, SIG_IGN)
        // Keep the real standard output for protocol lines; send fd 1 (print, FileHandle.standardOutput) to stderr.
        let protocolOutput = dup(STDOUT_FILENO)
        guard protocolOutput >= 0 else {
            writeDiagnostic("ServiceExtensionKit: dup(stdout) failed: errno \(errno)")
            exit(2)
        }
        _ = fcntl(protocolOutput, F_SETFD, FD_CLOEXEC)
        _ = dup2(STDERR_FILENO, STDOUT_FILENO)
        lineBufferStandardOutput()

        let session = HostSession(input: STDIN_FILENO, output: protocolOutput) { exit in
            if case .badRequest(let reason) = exit { writeDiagnostic("ServiceExtensionKit: \(reason)") }
            fflush(nil)
            // `_exit`: other threads (a download, the extension's own work) may still be running; skip the
            // process-wide destructors they could trip over. Everything we own is written already.
            _exit(exit.status)
        }
        let (request, environment): (UNNotificationRequest, ServiceExtensionEnvironment)
        do {
            (request, environment) = try session.readRequest()
        } catch {
            session.end(.badRequest("\(error)"))
            exit(2)  // not reached: `end` exits
        }
        ServiceExtensionEnvironment.current = environment
        current.withLock { $0 = session }
        session.start(makeExtension(), request: request)

        // iOS extensions have a main run loop; keep one alive (the timer only keeps `run()` from returning).
        RunLoop.main.add(Timer(timeInterval: 86_400, repeats: true) { _ in }, forMode: .default)
        while true {
            RunLoop.main.run()
        }
    }

    /// Adds an entry to the notification's timeline (a `{"type":"log"}` line). Outside the host (unit tests)
    /// the message goes to standard error.
    public static func log(_ message: String) {
        if let session = current.withLock({ $0 }) {
            session.log(message)
        } else {
            writeDiagnostic(message)
        }
    }

    private static let current = Mutex<HostSession?>(nil)

    /// Line-buffers C's `stdout` stream (fd 1 is now a pipe, which stdio would buffer fully), so `print` lines
    /// reach the timeline even if the sandbox kills the process. Swift 6 rejects touching the C global `stdout`
    /// directly (shared mutable state), so its address comes from the dynamic linker; this runs before any other
    /// thread exists.
    private static func lineBufferStandardOutput() {
        guard let symbol = dlsym(nil, "stdout") else { return }  // nil handle = RTLD_DEFAULT
        let stream = symbol.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee
        setvbuf(stream, nil, _IOLBF, 0)
    }
}
