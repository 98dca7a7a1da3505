// APNs Sandbox — names a timer of an event loop.
import Support

/// Identifies a timer scheduled with ``EventLoop/schedule(afterNanoseconds:_:)`` so it can be cancelled.
public struct TimerHandle: Hashable, Sendable {
    let id: TimerQueue<UInt64, () -> Void>.ID
}
