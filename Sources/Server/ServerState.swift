// APNs Sandbox — process-wide state the routes read (readiness).
import Synchronization
import Support

/// Whether the server accepts work. Shared by routes and the lifecycle.
///
/// Two things make it not ready: the lifecycle (before ``SandboxServer/start()`` and while draining
/// at shutdown: ``isReady`` is false), and the readiness checks of the parts it depends on (a store
/// whose writes fail or whose file is damaged), which give a reason while they fail.
public final class ServerState: Sendable {
    private let ready = Atomic<Bool>(false)
    private let checks = Locked<[@Sendable () -> String?]>([])

    public init() {}

    /// Started and not draining.
    public var isReady: Bool { ready.load(ordering: .relaxed) }

    func setReady(_ value: Bool) { ready.store(value, ordering: .relaxed) }

    /// Why the server cannot serve now although it runs (`store: database or disk is full`): the
    /// first failing readiness check's reason, nil when every check passes.
    public var notReadyReason: String? {
        let checks = checks.withLock { $0 }
        for check in checks {
            if let reason = check() { return reason }
        }
        return nil
    }

    /// Adds a check that returns why its part cannot serve, or nil. It runs on every `GET /readyz`:
    /// it must be cheap (read a cached state).
    func addReadinessCheck(_ check: @escaping @Sendable () -> String?) {
        checks.withLock { $0.append(check) }
    }
}
