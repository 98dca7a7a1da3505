// APNs Sandbox — a counter and a gauge: one atomic each, safe to update from any thread.
import Synchronization

/// A value that only goes up (Prometheus `counter`). One relaxed atomic add per update: cheap enough for
/// the event loops' hot path. Get one from its family once (``CounterFamily/labels(_:)``) and keep it.
public final class Counter: Sendable {
    private let value = Atomic<UInt64>(0)

    public init() {}

    public func increment(by amount: UInt64 = 1) {
        value.wrappingAdd(amount, ordering: .relaxed)
    }

    public var current: UInt64 { value.load(ordering: .relaxed) }
}

/// A value that goes up and down (Prometheus `gauge`), kept by the code that changes it.
public final class Gauge: Sendable {
    private let value = Atomic<Int64>(0)

    public init() {}

    public func increment(by amount: Int64 = 1) {
        value.wrappingAdd(amount, ordering: .relaxed)
    }

    public func decrement(by amount: Int64 = 1) {
        value.wrappingSubtract(amount, ordering: .relaxed)
    }

    public func set(_ newValue: Int64) {
        value.store(newValue, ordering: .relaxed)
    }

    public var current: Int64 { value.load(ordering: .relaxed) }
}
