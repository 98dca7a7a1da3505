// APNs Sandbox — process-wide state the routes read (readiness).
import Synchronization

/// Whether the server accepts work. Shared by routes and the lifecycle.
public final class ServerState: Sendable {
    private let ready = Atomic<Bool>(false)

    public init() {}

    public var isReady: Bool { ready.load(ordering: .relaxed) }

    func setReady(_ value: Bool) { ready.store(value, ordering: .relaxed) }
}
