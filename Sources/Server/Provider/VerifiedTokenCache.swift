// APNs Sandbox — provider tokens whose signature already verified.
import Synchronization
import Support

/// Remembers verified provider tokens so each token's ES256 signature is checked once, not on
/// every push (a verify costs ~0.1 ms; a busy connection reuses one token for up to an hour).
///
/// Bounded: when full, the whole cache is dropped (tokens are re-verified once on next use).
final class VerifiedTokenCache: Sendable {
    private let entries = Locked<Set<String>>([])
    private let capacity: Int

    init(capacity: Int = 50_000) {
        self.capacity = capacity
    }

    func contains(_ token: String) -> Bool {
        entries.withLock { $0.contains(token) }
    }

    func insert(_ token: String) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries.insert(token)
        }
    }
}
