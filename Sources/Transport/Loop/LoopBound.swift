// APNs Sandbox — carrying loop-confined objects across a Sendable boundary.

/// Wraps a loop-confined value so it can be captured by a `@Sendable` closure that will run
/// on that same loop (`loop.execute { bound.value.… }`).
///
/// Safety: `value` may only be read on `loop`'s thread, which `value` checks. Creating the
/// box on another thread is fine; the object inside is never touched there.
public struct LoopBound<Value>: @unchecked Sendable {
    private let stored: Value
    public let loop: EventLoop

    public init(_ value: Value, loop: EventLoop) {
        self.stored = value
        self.loop = loop
    }

    public var value: Value {
        loop.preconditionInEventLoop()
        return stored
    }
}
