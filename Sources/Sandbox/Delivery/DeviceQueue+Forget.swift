// APNs Sandbox — forgetting pushes on a device, as if they had never reached it (a reset of the sandbox).

extension DeviceQueue {
    /// What ``forget(where:budgets:)`` dropped.
    struct Forgotten {
        /// Acceptance completions of forgotten pushes whose acceptance was never handed to the store: the
        /// shell calls them (with success: the push was accepted, then reset away).
        var completions: [Completion] = []
        /// How many pushes of the device were forgotten: on their way, or with saves still to make.
        var count = 0
    }

    /// Forgets every push whose record `matches`: out of storage, the hold, the low-priority batch and the
    /// extension watchdog, and none of its saves still waiting is made; background budgets of the apps
    /// `budgets` picks are emptied. Nothing is saved and no event is written for them: the caller deletes
    /// their records right after (a reset), so that what was handed to the store before this call is
    /// committed before that delete and nothing of them is written after it.
    ///
    /// A save of theirs already in flight still completes as usual (its acceptance completions run); if it
    /// fails it is not tried again. Pushes that do not match go on as before.
    mutating func forget(where matches: (NotificationRecord) -> Bool, budgets: (String) -> Bool) -> Forgotten {
        var forgotten = Forgotten()
        let doomed = Set(entries.filter { matches($0.value.record) }.keys)
        for sequence in doomed {
            // Its acceptance would have been counted off when it committed (or failed), which now finds no entry.
            if entries[sequence]?.place == .committing { acceptancesAwaitingCommit -= 1 }
            dropEntry(sequence)
        }
        storedByApp = storedByApp.filter { !doomed.contains($0.value) }
        heldByApp = heldByApp.filter { !doomed.contains($0.value) }
        deferred.removeAll { doomed.contains($0) }
        if deferred.isEmpty { deferredDue = nil }
        // By record, not by entry: a push that reached a final status has no entry, but its last saves may wait.
        var pushes = doomed
        var kept: [PendingSave] = []
        for save in pendingSaves {
            if doomed.contains(save.sequence) || matches(save.record) {
                if let completion = save.completion { forgotten.completions.append(completion) }
                pushes.insert(save.sequence)
            } else {
                kept.append(save)
            }
        }
        pendingSaves = kept
        if pendingSaves.isEmpty { saveRetryAt = nil }
        if var batch = inFlight {
            for index in batch.indices where doomed.contains(batch[index].sequence) || matches(batch[index].record) {
                batch[index].isForgotten = true
                pushes.insert(batch[index].sequence)
            }
            inFlight = batch
        }
        for bundleID in backgroundDeliveries.keys where budgets(bundleID) {
            backgroundDeliveries[bundleID] = nil
        }
        forgotten.count = pushes.count
        return forgotten
    }
}
