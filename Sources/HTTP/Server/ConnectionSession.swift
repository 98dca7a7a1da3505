// APNs Sandbox — per-connection state that request handlers can keep and change.
import Synchronization
import Transport

/// State that lives as long as one connection, shared by every request on it.
///
/// Handlers keep their own per-connection state here (the provider endpoint binds a team and a
/// key to the connection at its first push) and can change protocol settings (HTTP/2
/// SETTINGS_MAX_CONCURRENT_STREAMS). State is keyed by type; each value is guarded by the
/// session's lock, so handlers may run on any thread.
public final class ConnectionSession: Sendable {
    public let connectionID: UInt64
    private let values = Mutex<[ObjectIdentifier: any Sendable]>([:])
    private let streamLimitControl = Mutex<(@Sendable (UInt32) -> Void)?>(nil)

    public init(connectionID: UInt64) {
        self.connectionID = connectionID
    }

    /// Runs `body` with exclusive access to this connection's value of type `T`, creating it
    /// with `make` on first use.
    public func withValue<T: Sendable, R>(
        _ type: T.Type, default make: () -> T, _ body: (inout T) throws -> R
    ) rethrows -> R {
        try values.withLock { storage in
            let key = ObjectIdentifier(type)
            var value = (storage[key] as? T) ?? make()
            defer { storage[key] = value }
            return try body(&value)
        }
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS on an HTTP/2 connection (no-op on HTTP/1.1).
    /// Safe from any thread; takes effect after the current read is processed.
    public func setMaxConcurrentStreams(_ limit: UInt32) {
        let control = streamLimitControl.withLock { $0 }
        control?(limit)
    }

    func installStreamLimitControl(_ control: @escaping @Sendable (UInt32) -> Void) {
        streamLimitControl.withLock { $0 = control }
    }
}
