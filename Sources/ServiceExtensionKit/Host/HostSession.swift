// APNs Sandbox — ServiceExtensionKit: one notification's run of an extension over the exec protocol.

import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a session ended.
enum HostExit: Equatable, Sendable {
    /// The first content was written.
    case delivered
    /// Standard input closed (the sandbox ended the instance) before any content.
    case inputClosed
    /// The request could not be read.
    case badRequest(String)

    var status: Int32 {
        switch self {
        case .delivered, .inputClosed: 0
        case .badRequest: 2
        }
    }
}

/// Drives one extension instance: reads the request, runs `didReceive` on a background thread, turns
/// `timeWillExpire` into `serviceExtensionTimeWillExpire()` on another thread, writes the first content.
///
/// The process-level parts (stdout redirection, the main run loop, `_exit`) live in ``ServiceExtensionHost``;
/// this type takes file descriptors and a `finish` callback so tests can run it in-process over pipes.
///
/// `@unchecked Sendable`: `state` is a `Mutex`; `reader` is used by the caller's thread for the request and then
/// only by the single watcher thread (handed over in `start`, never shared); `input`, `output` and `finish` are
/// immutable. Output lines are written while holding `state`, so they never interleave and nothing is written
/// after `finish`.
final class HostSession: @unchecked Sendable {
    private struct State {
        var delivered = false
        var finished = false
        var expiryRequested = false
    }

    private let output: Int32
    private let reader: LineReader
    private let finish: @Sendable (HostExit) -> Void
    private let state = Mutex(State())

    init(input: Int32, output: Int32, finish: @escaping @Sendable (HostExit) -> Void) {
        self.output = output
        self.reader = LineReader(fd: input)
        self.finish = finish
    }

    /// Blocks until the `request` line arrives and parses it.
    func readRequest() throws -> (UNNotificationRequest, ServiceExtensionEnvironment) {
        guard let line = reader.nextLine() else {
            throw WireFormat.ProtocolError(description: "standard input closed before the request")
        }
        return try WireFormat.parseRequest(line)
    }

    /// Calls `didReceive` on a new thread and watches the input for `timeWillExpire` on another.
    func start(_ instance: UNNotificationServiceExtension, request: UNNotificationRequest) {
        let box = ExtensionBox(instance)
        let handler: @Sendable (UNNotificationContent) -> Void = { [self] content in deliver(content) }
        Thread {
            Thread.current.name = "didReceive"
            box.instance.didReceive(request, withContentHandler: handler)
        }.start()
        Thread { [self] in
            Thread.current.name = "stdin"
            watchInput(box)
        }.start()
    }

    /// The content handler: the first call writes the `content` line and ends the session.
    func deliver(_ content: UNNotificationContent) {
        let line: Data
        do {
            line = try WireFormat.contentLine(content)
        } catch {
            writeDiagnostic("ServiceExtensionKit: could not encode the content: \(error)")
            return
        }
        let first = state.withLock { state -> Bool in
            guard !state.delivered, !state.finished else { return false }
            state.delivered = true
            writeAll(output, line)
            return true
        }
        if first {
            end(.delivered)
        } else {
            writeDiagnostic("ServiceExtensionKit: contentHandler called again; ignored (the first content wins)")
        }
    }

    /// Writes a `log` line (a timeline entry), unless the session is over.
    func log(_ message: String) {
        let line = WireFormat.logLine(message)
        state.withLock { state in
            if !state.finished { writeAll(output, line) }
        }
    }

    /// Ends the session once.
    func end(_ exit: HostExit) {
        let first = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.finished = true
            return true
        }
        if first { finish(exit) }
    }

    private func watchInput(_ box: ExtensionBox) {
        while let line = reader.nextLine() {
            switch WireFormat.messageType(of: line) {
            case "timeWillExpire":
                let call = state.withLock { state -> Bool in
                    guard !state.expiryRequested, !state.delivered else { return false }
                    state.expiryRequested = true
                    return true
                }
                if call {
                    Thread {
                        Thread.current.name = "timeWillExpire"
                        box.instance.serviceExtensionTimeWillExpire()
                    }.start()
                }
            default:
                let text = String(decoding: line.prefix(200), as: UTF8.self)
                writeDiagnostic("ServiceExtensionKit: ignored an unknown message on stdin: \(text)")
            }
        }
        end(.inputClosed)
    }
}

/// The extension instance, handed to the `didReceive` thread and, on expiry, to another thread.
///
/// `@unchecked Sendable`: this is what iOS does too — `serviceExtensionTimeWillExpire()` runs on a separate
/// thread while `didReceive` work may still be going on; synchronizing the subclass's own state between the two
/// is the extension author's job, as on iOS. The box itself is immutable.
final class ExtensionBox: @unchecked Sendable {
    let instance: UNNotificationServiceExtension

    init(_ instance: UNNotificationServiceExtension) { self.instance = instance }
}

/// Reads `\n`-terminated lines from a file descriptor (blocking); a last line without newline counts.
///
/// Not thread-safe; one thread at a time (see ``HostSession``).
final class LineReader {
    private let fd: Int32
    private var buffer = Data()
    private var atEnd = false

    init(fd: Int32) { self.fd = fd }

    func nextLine() -> Data? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[buffer.index(after: newline)...])
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
                return Data(line)
            }
            if atEnd {
                guard !buffer.isEmpty else { return nil }
                defer { buffer = Data() }
                return buffer
            }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
            } else if count == 0 || errno != EINTR {
                atEnd = true
            }
        }
    }
}

/// Writes all of `data` to `fd`, retrying on EINTR and short writes; gives up on other errors (the reader
/// is gone: the sandbox has ended the instance).
func writeAll(_ fd: Int32, _ data: Data) {
    data.withUnsafeBytes { raw in
        guard var pointer = raw.baseAddress else { return }
        var remaining = raw.count
        while remaining > 0 {
            let written = write(fd, pointer, remaining)
            if written > 0 {
                pointer += written
                remaining -= written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}

/// A line on standard error (the sandbox puts it in the notification's timeline).
func writeDiagnostic(_ message: String) {
    writeAll(STDERR_FILENO, Data((message + "\n").utf8))
}
