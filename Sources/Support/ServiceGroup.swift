// APNs Sandbox — services started in order and stopped in reverse, unwound when one fails to start.
import Synchronization

/// Starts its members in order and stops them in reverse order.
///
/// When a member's ``Service/start()`` throws, the members already started are stopped (newest first) and
/// the error is rethrown as it was: a failed start leaves nothing running. ``stop()`` stops each started
/// member once, however often and from however many threads it is called; a group that never started
/// stops nothing. A group starts at most once (stores that were closed do not open again).
///
/// ### Threads
/// `start()` and `stop()` may be called from any thread (never from a member's own start or stop). A
/// `stop()` while `start()` is still running stops the members started so far; the member being started
/// then is stopped as soon as its start returns, and `start()` throws ``ServiceGroupError``.
public final class ServiceGroup: Service {
    public let name: String
    public let services: [any Service]
    private let logger: Logger?

    private enum Phase { case idle, starting, running, stopped }

    private struct State {
        var phase = Phase.idle
        var started: [any Service] = []
    }

    private let state = Locked(State())

    /// - Parameters:
    ///   - name: How log lines name the group.
    ///   - services: The members, in start order.
    ///   - logger: Where each start and stop is logged, and a failed start (debug: the caller reports the error).
    public init(_ name: String, services: [any Service], logger: Logger? = nil) {
        self.name = name
        self.services = services
        self.logger = logger
    }

    /// Names of the members started and not yet stopped, in start order.
    public var startedServices: [String] { state.withLock { $0.started.map(\.name) } }

    /// Starts every member in order.
    /// - Throws: The first member's error (after the members started before it were stopped), or
    ///   ``ServiceGroupError`` when the group was started or stopped before, or was stopped meanwhile.
    public func start() throws {
        let isFirst = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .starting
            return true
        }
        guard isFirst else { throw ServiceGroupError("\(name) was already started or stopped: a group starts once") }
        for service in services {
            logger?.debug("starting \(service.name)")
            do {
                try service.start()
            } catch {
                let started = startedServices
                // Debug: the caller reports the error (the CLI prints one line for it).
                logger?.debug(
                    "\(service.name) failed to start; stopping what started before it",
                    [("service.error", "\(error)"), ("services.started", started.joined(separator: ","))])
                stop()
                throw error
            }
            let kept = state.withLock { state -> Bool in
                guard state.phase == .starting else { return false }
                state.started.append(service)
                return true
            }
            guard kept else {
                service.stop()
                throw ServiceGroupError("\(name) was stopped while \(service.name) was starting")
            }
        }
        state.withLock { state in
            if state.phase == .starting { state.phase = .running }
        }
    }

    /// Stops the started members, newest first; blocks until each one's stop has returned. Idempotent.
    public func stop() {
        let started = state.withLock { state -> [any Service] in
            defer {
                state.started = []
                state.phase = .stopped
            }
            return state.started
        }
        for service in started.reversed() {
            logger?.debug("stopping \(service.name)")
            service.stop()
        }
    }
}

/// A ``ServiceGroup`` used out of turn: started twice, or stopped while it started.
public struct ServiceGroupError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
