// APNs Sandbox — an exec extension: one process per notification speaking docs/extension-protocol.md.
import APNsProtocol
import Dispatch
import Glibc
import Sandbox
import Synchronization
import Support

/// Runs one process for one notification and speaks the exec protocol with it.
///
/// ### Overview
/// Before `didReceive` the instance waits for a ``Launcher`` ticket (``whenReady(_:_:)``), so that its budget
/// starts only a few spawns before its own process. ``start(_:)`` then spawns the program (``ChildProcess``)
/// on the ticket's thread, never a worker queue, in the instance's fresh temporary directory with a clean
/// environment, records it in the ``ProcessRegistry`` (so that it cannot outlive the server), hands it to the
/// runtime's ``ProcessReactor`` (which does all pipe I/O, reaping and memory sampling on one thread) and
/// queues the `request` line. The reactor's events arrive in order on the
/// instance's queue. `timeWillExpire` is a stdin line. At the end the process gets its stdin closed and,
/// unless it exits within ``RuntimeConfiguration/settleMilliseconds`` (after content) or at once (any other
/// ending), SIGKILL to its whole process group.
///
/// ### Protocol errors
/// A stdout line that is not a JSON object, or a `content` message of the wrong shape, before any content
/// is an error (`original-error`); after the outcome is decided it is only noted. Objects of an unknown
/// `type` are noted and ignored.
final class ExecDriver: InstanceDriver {
    private let settings: ExtensionConfiguration.ExecSettings
    private let reactor: ProcessReactor
    private let launcher: Launcher
    private let registry: ProcessRegistry

    private struct State {
        /// Held from ``whenReady(_:_:)`` until the process is spawned (or the instance ends first).
        var ticket: Launcher.Ticket?
        var process: ProcessReactor.Handle?
        /// `settle` was called: nothing more is started.
        var isSettled = false
        /// `timeWillExpire` came before the process existed.
        var expirePending = false
        var stdoutLines = ExtensionOutputLines()
        var stderrBuffer: [UInt8] = []
        var stderrCaptured = 0
        var stderrTruncated = false
        var exit: ExitStatus?
        var killedForMemory = false
        var hasKilled = false
        /// Set while settling: finishes the settle once the process is gone.
        var settleDone: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    init(
        settings: ExtensionConfiguration.ExecSettings, reactor: ProcessReactor, launcher: Launcher,
        registry: ProcessRegistry
    ) {
        self.settings = settings
        self.reactor = reactor
        self.launcher = launcher
        self.registry = registry
    }

    /// The environment of every exec extension (docs/extension-protocol.md, "The process").
    static func environment(
        configured: [String: String], directory: String, appGroup: String, instanceID: String
    ) -> [String: String] {
        var environment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"]
        for (key, value) in configured { environment[key] = value }
        environment["HOME"] = directory
        environment["TMPDIR"] = directory
        environment["APNS_SANDBOX_APP_GROUP"] = appGroup
        environment["APNS_SANDBOX_INSTANCE"] = instanceID
        return environment
    }

    // MARK: InstanceDriver

    func whenReady(_ instance: Instance, _ ready: @escaping @Sendable () -> Void) {
        let asked = instance.clock.monotonicNanoseconds
        launcher.reserve { [self] ticket, waited in
            let keep = state.withLock { state -> Bool in
                guard !state.isSettled else { return false }
                state.ticket = ticket
                return true
            }
            guard keep else {
                ticket.release()
                return
            }
            if waited {
                let milliseconds = (instance.clock.monotonicNanoseconds &- asked) / 1_000_000
                instance.note(.queued, "waited \(milliseconds) ms for a process launcher (\(launcher.queueCount) "
                              + "launching at a time)")
            }
            ready()
        }
    }

    func start(_ instance: Instance) {
        guard let ticket = state.withLock({ $0.ticket }) else {
            instance.fail(.error("could not start the extension: no process launcher"))
            return
        }
        ticket.thread.execute { [self] in launch(instance) }
    }

    func timeWillExpire(_ instance: Instance) {
        let process = state.withLock { state -> ProcessReactor.Handle? in
            guard let process = state.process else {
                state.expirePending = true
                return nil
            }
            return state.exit == nil ? process : nil
        }
        if let process { reactor.write(Self.expireMessage, to: process) }
    }

    func settle(_ instance: Instance, decision: InstanceStateMachine.Decision, done: @escaping @Sendable () -> Void) {
        let ticket = state.withLock { state -> Launcher.Ticket? in
            state.settleDone = done
            state.isSettled = true
            defer { state.ticket = nil }
            return state.ticket
        }
        ticket?.release()
        guard let process = liveProcess else {
            finishSettle()
            return
        }
        reactor.closeStdin(process)
        let linger = instance.context.settings.settleMilliseconds
        // Both waits are real time, not the clock's: they give a real process time to exit, which a virtual
        // clock neither speeds up nor (frozen) should stretch forever. A timeout kills at once.
        if decision.content != nil {
            // Content arrived: let the process exit on its own for a moment (its later output is noted).
            instance.queue.asyncAfter(deadline: .now() + .milliseconds(linger)) { [self] in
                kill(instance, reason: "still running \(linger) ms after its content")
            }
        } else {
            kill(instance, reason: "at the end of the instance (\(decision.outcome.rawValue))")
        }
        // Killed processes are reaped within a reactor tick; never wait on one much longer than that.
        instance.queue.asyncAfter(deadline: .now() + .milliseconds(linger + 500)) { [self] in finishSettle() }
    }

    // MARK: Launching

    private static let expireMessage = Array(#"{"type":"timeWillExpire"}"#.utf8) + [0x0A]

    /// On the ticket's thread: spawns the process, registers it, queues the request; gives the ticket back.
    private func launch(_ instance: Instance) {
        let ticket = state.withLock { state -> Launcher.Ticket? in
            defer { state.ticket = nil }
            return state.isSettled ? nil : state.ticket
        }
        guard let ticket else { return }  // ended before it started (shutdown); settle gave the ticket back
        let context = instance.context
        var spawned: ChildProcess
        do {
            let directory = try instance.temporaryDirectory()
            let appGroup = try instance.appGroupDirectory()
            let environment = Self.environment(configured: settings.environment, directory: directory,
                                               appGroup: appGroup, instanceID: context.id)
            let executable = try ChildProcess.resolve(settings.path, searchPath: environment["PATH"] ?? "")
            spawned = try ChildProcess.spawn(executable: executable, arguments: settings.arguments,
                                             environment: environment, directory: directory,
                                             guardian: registry.guardianDescriptor())
        } catch {
            ticket.release()
            instance.fail(.error("could not start the extension: \(error)"))
            return
        }
        spawned.registration = registry.register(spawned.pid, instance: context.id)
        ticket.release()
        instance.logger.debug("extension process started", [("extension.pid", String(spawned.pid))])
        let limit = context.configuration.memoryLimitMB * 1024 * 1024
        let request = Array((Self.requestMessage(context).serialized + "\n").utf8)
        // Added, sent its request and recorded in one step under the driver's lock: a decision (settle) or
        // `timeWillExpire` on another thread sees either no process yet (and is handled below) or this one with its
        // request queued first — never a process the reactor already counts that settle cannot find to kill.
        // (The reactor's calls only queue work for its own thread; its events reach the driver through the queue.)
        let (process, settled, expire) = state.withLock { state -> (ProcessReactor.Handle, Bool, Bool) in
            let process = reactor.add(spawned, limitBytes: limit) { [self] event in
                instance.queue.async { self.handle(event, instance) }
            }
            reactor.write(request, to: process)
            state.process = process
            return (process, state.isSettled, state.expirePending)
        }
        if expire { reactor.write(Self.expireMessage, to: process) }
        if settled {
            // The instance ended while the process was being spawned (shutdown): it is not wanted.
            reactor.kill(process)
            reactor.detach(process)
        }
    }

    // MARK: Events

    /// The process while it has not been reaped.
    private var liveProcess: ProcessReactor.Handle? {
        state.withLock { $0.exit == nil ? $0.process : nil }
    }

    private func handle(_ event: ProcessEvent, _ instance: Instance) {
        switch event {
        case .stdout(let bytes): stdout(bytes, eof: false, instance)
        case .stdoutClosed: stdout([], eof: true, instance)
        case .stderr(let bytes): stderr(bytes, eof: false, instance)
        case .stderrClosed: stderr([], eof: true, instance)
        case .memoryExceeded(let resident): memoryExceeded(resident, instance)
        case .exited(let exit): processExited(exit, instance)
        }
    }

    private func kill(_ instance: Instance, reason: String) {
        let process = state.withLock { state -> ProcessReactor.Handle? in
            guard state.exit == nil, !state.hasKilled, let process = state.process else { return nil }
            state.hasKilled = true
            return process
        }
        guard let process else { return }
        reactor.kill(process)
        instance.note(.killed, "process group \(process.pid) killed: " + reason)
    }

    private func memoryExceeded(_ resident: Int, _ instance: Instance) {
        let process = state.withLock { state -> ProcessReactor.Handle? in
            guard state.exit == nil, !state.killedForMemory, let process = state.process else { return nil }
            state.killedForMemory = true
            state.hasKilled = true
            return process
        }
        guard let process else { return }
        reactor.kill(process)
        let limit = instance.context.configuration.memoryLimitMB
        instance.fail(.crash("resident memory \(resident / 1024 / 1024) MiB is over the \(limit) MiB limit; the "
                             + "process group was killed"), as: .memoryExceeded)
    }

    private func processExited(_ exit: ExitStatus, _ instance: Instance) {
        let killed = state.withLock { state -> Bool in
            state.exit = exit
            return state.hasKilled
        }
        instance.note(.exited, exit.description)
        if !killed, !instance.isDecided {
            switch exit {
            case .signaled:
                instance.fail(.crash("the extension died (\(exit)) before calling the content handler"))
            case .exited(let code) where code != 0:
                instance.fail(.error("the extension exited with status \(code) before calling the content handler"))
            case .exited:
                instance.fail(.error("the extension exited without calling the content handler"))
            }
        }
        finishSettle()
    }

    private func finishSettle() {
        let (done, process) = state.withLock { state -> ((@Sendable () -> Void)?, ProcessReactor.Handle?) in
            defer { state.settleDone = nil }
            return (state.settleDone, state.process)
        }
        guard let done else { return }
        if let process { reactor.detach(process) }
        done()
    }

    // MARK: The request

    static func requestMessage(_ context: InstanceContext) -> JSON {
        var keys: [(String, JSON)] = []
        if let key = context.device.keys[context.app.bundleID] { keys.append((context.app.bundleID, .string(key))) }
        return .object([
            ("type", .string("request")),
            ("identifier", .string(context.requestIdentifier)),
            ("apnsId", .string(context.record.apnsID)),
            ("bundleId", .string(context.app.bundleID)),
            ("appGroup", .string(context.paths.appGroupDirectory)),
            ("locale", .string(context.device.locale)),
            ("keys", .object(keys)),
            ("content", context.request.json),
        ])
    }

    // MARK: stdout and stderr

    private func stdout(_ bytes: [UInt8], eof: Bool, _ instance: Instance) {
        let maxLine = instance.context.settings.maxMessageBytes
        let (lines, overlong) = state.withLock { $0.stdoutLines.append(bytes, eof: eof, maxLineBytes: maxLine) }
        for line in lines {
            switch ExtensionMessage.execLine(line) {
            case .blank:
                break
            case .content(let content):
                instance.contentHandlerCalled(content)
            case .log(let message):
                instance.note(.log, message)
            case .unknown(let type, let excerpt):
                instance.note(.outputIgnored, "unknown message type \(type.map { "\"\($0)\"" } ?? "(none)"): " + excerpt)
            case .invalid(let problem):
                protocolError(problem, instance)
            }
        }
        if overlong {
            protocolError("a stdout line is longer than \(maxLine) bytes", instance)
        }
    }

    private func protocolError(_ problem: String, _ instance: Instance) {
        if instance.isDecided {
            instance.note(.outputIgnored, problem)
        } else {
            instance.fail(.error(problem))
        }
    }

    private func stderr(_ bytes: [UInt8], eof: Bool, _ instance: Instance) {
        let limit = instance.context.settings.stderrCaptureBytes
        var lines: [String] = []
        var truncatedNow = false
        state.withLock { state in
            state.stderrBuffer += bytes
            while let newline = state.stderrBuffer.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: state.stderrBuffer[..<newline], as: UTF8.self))
                state.stderrBuffer.removeSubrange(...newline)
            }
            if eof || state.stderrBuffer.count > 4096 {
                if !state.stderrBuffer.isEmpty { lines.append(String(decoding: state.stderrBuffer, as: UTF8.self)) }
                state.stderrBuffer = []
            }
            var kept: [String] = []
            for line in lines where !state.stderrTruncated {
                if state.stderrCaptured + line.utf8.count > limit {
                    state.stderrTruncated = true
                    truncatedNow = true
                } else {
                    state.stderrCaptured += line.utf8.count + 1
                    kept.append(line)
                }
            }
            lines = kept
        }
        for line in lines { instance.note(.stderr, line) }
        if truncatedNow { instance.note(.stderr, "… (stderr beyond \(limit) bytes is not kept)") }
    }
}
