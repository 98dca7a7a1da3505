// APNs Sandbox — per-connection state that request handlers can keep and change.
import Synchronization
import Transport
import Support

/// State that lives as long as one connection, shared by every request on it.
///
/// Handlers keep their own per-connection state here (the provider endpoint binds a team and a
/// key to the connection at its first push) and can change protocol settings (HTTP/2
/// SETTINGS_MAX_CONCURRENT_STREAMS). State is one object per type, created on first use; the
/// object guards its own mutable state, so handlers may run on any thread.
public final class ConnectionSession: Sendable {
    public let connectionID: UInt64
    private let objects = Locked<[ObjectIdentifier: any AnyObject & Sendable]>([:])
    /// Boxed: a closure kept directly in a `Locked` is re-wrapped in thunks on every access.
    private let streamLimitControl = Locked<StreamLimitControl?>(nil)

    public init(connectionID: UInt64) {
        self.connectionID = connectionID
    }

    /// This connection's object of type `T`, made with `make` on first use.
    public func object<T: AnyObject & Sendable>(_ type: T.Type, default make: () -> T) -> T {
        objects.withLock { storage in
            let key = ObjectIdentifier(type)
            if let existing = storage[key] as? T { return existing }
            let created = make()
            storage[key] = created
            return created
        }
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS on an HTTP/2 connection (no-op on HTTP/1.1).
    /// Safe from any thread; takes effect after the current read is processed.
    public func setMaxConcurrentStreams(_ limit: UInt32) {
        let control = streamLimitControl.withLock { $0 }
        control?.set(limit)
    }

    func installStreamLimitControl(_ control: @escaping @Sendable (UInt32) -> Void) {
        let box = StreamLimitControl(control)
        streamLimitControl.withLock { $0 = box }
    }
}

/// The HTTP/2 handler's stream-limit setter, held by reference.
private final class StreamLimitControl: Sendable {
    private let setter: @Sendable (UInt32) -> Void

    init(_ setter: @escaping @Sendable (UInt32) -> Void) {
        self.setter = setter
    }

    func set(_ limit: UInt32) { setter(limit) }
}
