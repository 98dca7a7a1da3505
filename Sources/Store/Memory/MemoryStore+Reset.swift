// APNs Sandbox — resetting the memory store to a seed, or replacing what it holds with a snapshot, in one step.
import Foundation
import Sandbox

extension MemoryStore {
    /// Carries out `reset` as ``SQLiteStore/reset(_:committed:)`` does, in one step under the store's lock
    /// (a reader sees all of it or none of it): notifications and events go, devices and apps are kept,
    /// replaced, deleted or added, the notifications to insert are inserted (past the journal's bound only the
    /// newest stay: the others are in `removedNotifications`), the announcement is logged; then, in the store's
    /// callback order, `committed` runs and the announcement goes to the event observer.
    @discardableResult
    public func reset(
        _ reset: StoreReset, committed: @escaping @Sendable (StoreResetOutcome) -> Void = { _ in }
    ) throws -> StoreResetOutcome {
        let capacity = capacity
        return try write({ state, directory in
            Self.apply(reset, to: &state, directory: &directory, capacity: capacity)
        }, committed: committed, events: { outcome in outcome.event.map { [$0] } ?? [] })
    }

    private static func apply(
        _ reset: StoreReset, to state: inout MemoryState, directory: inout MemoryDirectory, capacity: Capacity
    ) -> StoreResetOutcome {
        var outcome = StoreResetOutcome()
        switch reset.notifications {
        case .nothing:
            break
        case .everything:
            outcome.removedNotifications = state.notifications.removeAll()
        case .matching(let tokens, let bundleIDs):
            outcome.removedNotifications = state.notifications.remove { record, _ in
                tokens.contains(record.deviceToken) || bundleIDs.contains(record.bundleID)
            }
        }
        outcome.counts.notificationsRemoved = outcome.removedNotifications.count
        switch reset.events {
        case .nothing:
            break
        case .everything:
            outcome.counts.eventsRemoved = state.events.remove { _ in true }
        case .matching(let tokens, let bundleIDs):
            let topics = reset.rejectedTopics
            outcome.counts.eventsRemoved = state.events.remove { event in
                guard event.type != .sandboxReset else { return false }
                if let token = event.deviceToken, tokens.contains(token) { return true }
                if event.type == .pushRejected, let topic = event.topic, topics.contains(topic) { return true }
                return !bundleIDs.isEmpty && bundleID(of: event).map(bundleIDs.contains) == true
            }
        }
        outcome.devices = resetDevices(reset, in: &directory)
        outcome.counts.devicesRemoved = outcome.devices.count { $0.after == nil }
        outcome.counts.devicesWritten = outcome.devices.count { $0.after != nil }
        outcome.apps = resetApps(reset, in: &directory)
        outcome.counts.appsRemoved = outcome.apps.count { $0.after == nil }
        outcome.counts.appsWritten = outcome.apps.count { $0.after != nil }
        for record in reset.notificationsToInsert {
            state.notifications.upsert(record)
        }
        // A snapshot larger than the journal keeps its newest records, like any save; the others count as
        // removed (their attachment files go too).
        let dropped = state.notifications.drop(toKeep: capacity.notifications)
        outcome.removedNotifications += dropped.records.map { NotificationKey(apnsID: $0.apnsID, deviceToken: $0.deviceToken) }
        outcome.counts.notificationsInserted = reset.notificationsToInsert.count - dropped.records.count
        if let announcement = reset.announcement {
            outcome.event = state.events.append([announcement(outcome.counts)], capacity: capacity.events).first
        }
        return outcome
    }

    /// The `bundleId` of an event's data (its JSON object), as the SQLite store's `json_extract` reads it.
    private static func bundleID(of event: SandboxEvent) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(event.data)) as? [String: Any]
        return object?["bundleId"] as? String
    }

    private static func resetDevices(_ reset: StoreReset, in state: inout MemoryDirectory) -> [DeviceModification] {
        let stored = reset.device == nil ? [] : reset.devicesToDecide.map { tokens in tokens.sorted().compactMap { state.devices[$0] } }
            ?? state.devices.all
        return ResetDecisions.apply(
            stored: stored, decide: reset.device, toAdd: reset.devicesToAdd, key: \.token, rekeyed: ResetDecisions.rekeyed,
            isStored: { state.devices[$0] != nil }, save: { state.devices.set($0, for: $0.token) },
            delete: { _ = state.devices.remove($0) }
        ).map { DeviceModification(before: $0.before, after: $0.after) }
    }

    private static func resetApps(_ reset: StoreReset, in state: inout MemoryDirectory) -> [(before: AppRecord?, after: AppRecord?)] {
        let stored = state.apps.values.sorted { $0.bundleID < $1.bundleID }
        return ResetDecisions.apply(
            stored: stored, decide: reset.app, toAdd: reset.appsToAdd, key: \.bundleID, rekeyed: ResetDecisions.rekeyed,
            isStored: { state.apps[$0] != nil }, save: { state.apps[$0.bundleID] = $0 },
            delete: { state.apps[$0] = nil })
    }
}
