// APNs Sandbox — whether the store can serve: writes committing, no damage seen.
import Support
import Synchronization

/// The health of a store, as its reads and writes found it.
public enum StoreHealth: Sendable, Equatable {
    /// Nothing failed, or writes committed again after a failure.
    case healthy
    /// Writes fail for a reason outside the store that may pass (the disk or `maxSizeBytes` is full,
    /// an I/O error, the file is locked by another process): healthy again once a write commits.
    case failing(reason: String)
    /// SQLite reported the file damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`). It stays so until the
    /// store is closed: damage does not heal, and later successful writes do not make it go away.
    case corrupt(reason: String)

    public var isHealthy: Bool { self == .healthy }

    /// SQLite's message for the failure (`database or disk is full`), nil when healthy.
    public var reason: String? {
        switch self {
        case .healthy: nil
        case .failing(let reason), .corrupt(let reason): reason
        }
    }
}

/// The store's ``StoreHealth``, updated by the writer thread (every failed transaction, every probe)
/// and by readers (a read that finds the file damaged), and told to one observer.
final class StoreHealthMonitor: Sendable {
    private let state = Locked<StoreHealth>(.healthy)
    private let observer = ObserverSlot<StoreHealth>()

    var current: StoreHealth { state.withLock { $0 } }

    /// Whether the writer should probe: writes failed for a reason that may pass.
    var isFailing: Bool {
        if case .failing = current { return true }
        return false
    }

    /// Replaces the observer (nil removes it).
    func observe(_ newObserver: (@Sendable (StoreHealth) -> Void)?) {
        observer.set(newObserver)
    }

    /// Takes note of a failed read or write: corruption makes the store `corrupt`, a failure of the
    /// environment (``StoreError/isEnvironmentFailure``) `failing`; other errors (a constraint, a
    /// record that cannot be decoded, a closed store) say nothing about the file and change nothing.
    func record(_ error: any Error) {
        guard let error = error as? StoreError else { return }
        if error.isCorruption {
            change { health in health = .corrupt(reason: error.message) }
        } else if error.isEnvironmentFailure {
            change { health in
                if case .corrupt = health { return }
                health = .failing(reason: error.message)
            }
        }
    }

    /// A write committed where the last ones failed: `failing` becomes `healthy` (`corrupt` stays).
    func recordWriteSucceeded() {
        change { health in
            if case .failing = health { health = .healthy }
        }
    }

    /// Applies `body` and tells the observer when the health changed. The observer runs under the
    /// lock, so that transitions reach it in the order they happened: it must be quick (a log line).
    private func change(_ body: (inout StoreHealth) -> Void) {
        state.withLock { health in
            let old = health
            body(&health)
            guard health != old else { return }
            observer(health)
        }
    }
}
