// APNs Sandbox — how a handler learns that nobody waits for its response any more.
import Synchronization
import Support

/// Cancelled when the client stops waiting for a request's response before it was sent: the HTTP/2
/// stream was reset (the peer's RST_STREAM, a timeout, a connection limit) or the connection closed.
///
/// Work that waits (long-polls, event streams) registers ``onCancel(_:)`` to drop what it holds; any
/// handler may look at ``isCancelled`` before expensive work. A response produced after cancellation is
/// discarded by the connection. Thread-safe; handlers run once, on the thread that cancels (usually the
/// connection's event loop, so they must not block).
public final class RequestCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var handlers: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    public init() {}

    /// Whether the request was cancelled.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Runs `handler` once when the request is cancelled; at once if it already is. Never runs for a
    /// request that completes normally.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.isCancelled else { return true }
            state.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Cancels the request and runs the registered handlers (only the first call does anything).
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.isCancelled else { return [] }
            state.isCancelled = true
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler() }
    }
}
