// APNs Sandbox — the lifecycle of the parts that own threads, timers and files: start, then stop.

/// A part of the server that owns something running (a thread, a timer, an open file, a socket) from
/// ``start()`` until ``stop()``.
///
/// ### Contract
/// - ``start()`` either succeeds, or throws having left nothing running (it undoes its own half-done work).
/// - ``stop()`` is called once after a successful start (``ServiceGroup`` makes sure of it); it blocks until
///   what the service owns has ended, and must not throw: a failure is logged, not reported.
/// - Construction does not start anything: a value that was built but never started owns nothing that runs.
public protocol Service: Sendable {
    /// How log lines name the service (`store`, `event loops`).
    var name: String { get }
    func start() throws
    func stop()
}

/// A ``Service`` made of two closures: for a one-off start step (`recovery`, seeding) or for a part whose
/// own type names its methods differently (`shutdown()`, `close()`).
public struct ServiceStep: Service {
    public let name: String
    private let startBody: @Sendable () throws -> Void
    private let stopBody: @Sendable () -> Void

    /// - Parameters:
    ///   - name: How log lines name the step.
    ///   - start: What starting does; nothing by default (a part that only needs stopping).
    ///   - stop: What stopping does; nothing by default (a step that leaves nothing running).
    public init(
        _ name: String, start: @escaping @Sendable () throws -> Void = {}, stop: @escaping @Sendable () -> Void = {}
    ) {
        self.name = name
        self.startBody = start
        self.stopBody = stop
    }

    public func start() throws { try startBody() }
    public func stop() { stopBody() }
}
