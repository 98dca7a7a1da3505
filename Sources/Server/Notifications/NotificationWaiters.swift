// APNs Sandbox — long-polls: answering when a notification (or N of them) reaches a final state.
import Dispatch
import Sandbox
import Synchronization
import Support

/// Parked requests waiting for notifications to reach a final status.
///
/// The delivery engine reports every change (`notify`); with nobody waiting that costs one atomic
/// load. A waiter fires exactly once: when its condition holds or at its timeout, whichever comes
/// first (the one that removes it from the table answers), or never when it is cancelled (the client
/// left: ``HTTPRequest/cancellation``).
final class NotificationWaiters: Sendable {
    private struct Waiter {
        /// Waits for this record (this apns-id on this device) to be final…
        var apnsID: String?
        var deviceToken: String?
        /// …or, after a final record matching `filter`, for `isSatisfied` to hold.
        var filter: NotificationFilter?
        var isSatisfied: (@Sendable () -> Bool)?
        /// Matching final records still to see before `isSatisfied` is worth asking (it queries the
        /// store: asking on every record would make a large wait quadratic).
        var remaining: Int
        var fire: @Sendable () -> Void
    }

    private let waiters = Locked<[UInt64: Waiter]>([:])
    private let active = Atomic<Int>(0)
    private let nextID = Atomic<UInt64>(1)

    init() {}

    /// Parks `fire` until the notification `apnsID` on `deviceToken` is final, or `timeoutSeconds` pass.
    /// - Returns: the waiter's id, for ``cancel(_:)``.
    @discardableResult
    func wait(
        forFinal apnsID: String, deviceToken: String, timeoutSeconds: Double, fire: @escaping @Sendable () -> Void
    ) -> UInt64 {
        park(Waiter(apnsID: apnsID, deviceToken: deviceToken, filter: nil, isSatisfied: nil, remaining: 0, fire: fire),
             timeoutSeconds: timeoutSeconds)
    }

    /// Parks `fire` until `isSatisfied` holds (checked when a final record matching `filter`
    /// appears), or `timeoutSeconds` pass.
    /// - Parameter missing: how many more matching final records are needed (re-checked with
    ///   `isSatisfied` only once that many have been seen).
    /// - Returns: the waiter's id, for ``cancel(_:)``.
    @discardableResult
    func wait(
        for filter: NotificationFilter, missing: Int, until isSatisfied: @escaping @Sendable () -> Bool,
        timeoutSeconds: Double, fire: @escaping @Sendable () -> Void
    ) -> UInt64 {
        park(Waiter(apnsID: nil, deviceToken: nil, filter: filter, isSatisfied: isSatisfied, remaining: max(1, missing), fire: fire),
             timeoutSeconds: timeoutSeconds)
    }

    private func park(_ waiter: Waiter, timeoutSeconds: Double) -> UInt64 {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        waiters.withLock { $0[id] = waiter }
        active.wrappingAdd(1, ordering: .relaxed)
        DispatchQueue.global().asyncAfter(deadline: .now() + timeoutSeconds) { [self] in
            take(id)?.fire()
        }
        return id
    }

    /// Drops waiter `id` without firing it (its client is gone); nothing if it already fired.
    func cancel(_ id: UInt64) {
        _ = take(id)
    }

    /// Waiters parked now.
    var count: Int { active.load(ordering: .relaxed) }

    private func take(_ id: UInt64) -> Waiter? {
        let waiter = waiters.withLock { $0.removeValue(forKey: id) }
        if waiter != nil { active.wrappingSubtract(1, ordering: .relaxed) }
        return waiter
    }

    /// Called for every change of every record.
    func notify(_ record: NotificationRecord) {
        guard active.load(ordering: .relaxed) > 0, record.status.isFinal else { return }
        let candidates = waiters.withLock { waiters -> [(UInt64, Waiter)] in
            var due: [(UInt64, Waiter)] = []
            for (id, waiter) in waiters {
                if let apnsID = waiter.apnsID {
                    if apnsID == record.apnsID, waiter.deviceToken == record.deviceToken { due.append((id, waiter)) }
                } else if let filter = waiter.filter, Self.matches(filter, record) {
                    var counted = waiter
                    counted.remaining -= 1
                    waiters[id] = counted
                    if counted.remaining <= 0 { due.append((id, counted)) }
                }
            }
            return due
        }
        for (id, waiter) in candidates {
            if let isSatisfied = waiter.isSatisfied, !isSatisfied() {
                // Not there yet (e.g. records counted twice): check again on the next match.
                waiters.withLock { if $0[id] != nil { $0[id]?.remaining = 1 } }
                continue
            }
            take(id)?.fire()
        }
    }

    static func matches(_ filter: NotificationFilter, _ record: NotificationRecord) -> Bool {
        if let token = filter.deviceToken, token != record.deviceToken { return false }
        if let topic = filter.topic, topic != record.topic { return false }
        if let bundle = filter.bundleID, bundle != record.bundleID { return false }
        if let status = filter.status, status != record.status { return false }
        if let statuses = filter.statuses, !statuses.contains(record.status) { return false }
        if let since = filter.since, record.receivedAt < since { return false }
        if let until = filter.until, record.receivedAt >= until { return false }
        if let types = filter.pushTypes, !types.contains(record.pushType ?? "") { return false }
        if let outcomes = filter.outcomes, !outcomes.contains(where: { $0 == record.outcome }) { return false }
        // `search` is not checked here (a hint only: the waiter's own condition counts in the store).
        return true
    }
}
