// APNs Sandbox — where a push goes next on its device: expire, discard, store, batch, hold or deliver.

extension DeviceQueue {
    /// Decides the next step of push `sequence` at delivery time.
    ///
    /// In order: past its deadline → `expired`; app uninstalled → `discarded`; device offline → `expired`
    /// for `apns-expiration: 0`, else `stored` (one per app); first attempt of a low-priority push with a
    /// batching delay → `deferred`; a background push over the hourly budget → held (`stored`; expired for
    /// `apns-expiration: 0`); otherwise → `delivering`.
    mutating func route(
        _ sequence: UInt64, device: DeviceRecord?, at now: DeliveryInstant, isFirstAttempt: Bool
    ) -> [Action] {
        guard let entry = entries[sequence] else { return [] }
        let traits = entry.traits
        let bundleID = entry.record.bundleID
        if isFirstAttempt, let (fault, applied) = entry.record.deliveryFault {
            switch fault {
            case .lose:
                finish(sequence, .discarded, detail: DeliveryRules.lost(by: applied), at: now)
                return []
            case .deliverLate(let milliseconds):
                let acceptedAt = entry.record.timeline.first { $0.step == NotificationStatus.accepted.rawValue }?.at ?? now.wall
                if acceptedAt + milliseconds > now.wall {
                    deliverLate(sequence, until: acceptedAt + milliseconds, fault: applied, milliseconds: milliseconds, at: now)
                    return []
                }
            case .extensionCrash, .extensionTimeout:
                break
            }
        }
        if let reason = traits.expiryReason(at: now.wall) {
            finish(sequence, .expired, detail: reason, at: now)
            return []
        }
        if isUninstalled(bundleID, device: device, at: now) {
            finish(sequence, .discarded, detail: DeliveryRules.appUninstalled, at: now)
            return []
        }
        guard isOnline else {
            if traits.expiresAtOnce {
                finish(sequence, .expired, detail: DeliveryRules.notStoredOffline, at: now)
            } else {
                store(sequence, at: now, transition: true)
            }
            return []
        }
        if isFirstAttempt, traits.isLowPriority, settings.lowPriorityDelayMilliseconds > 0 {
            deferUntilBatch(sequence, at: now)
            return []
        }
        if traits.kind == .background, settings.backgroundPushesPerHour > 0 {
            let used = pruneBudget(bundleID, at: now.wall)
            guard used < settings.backgroundPushesPerHour else {
                if traits.expiresAtOnce {
                    finish(sequence, .expired, detail: DeliveryRules.notStoredThrottled, at: now)
                } else {
                    hold(sequence, at: now, transition: true)
                }
                return []
            }
            backgroundDeliveries[bundleID, default: []].append(now.wall)
        }
        return deliver(sequence, device: device, at: now)
    }

    /// Whether ``route(_:device:at:isFirstAttempt:)`` would deliver a new push at once: the device is
    /// online, the push is neither expired nor for an uninstalled app, not batched (low priority with a
    /// delay) and not a background push (whose hourly budget decides).
    func goesStraightToDevice(
        _ traits: PushTraits, bundleID: String, device: DeviceRecord?, at now: DeliveryInstant
    ) -> Bool {
        isOnline && traits.kind != .background && traits.expiryReason(at: now.wall) == nil
            && !(traits.isLowPriority && settings.lowPriorityDelayMilliseconds > 0)
            && !isUninstalled(bundleID, device: device, at: now)
    }

    /// `delivering`; background and system pushes go on to `delivered-silent`, alert pushes are presented:
    /// shown at once with `directContent` when the shell gave it (`displayed`, `direct`), else handed to the
    /// shell (``Action/present(_:)``).
    mutating func deliver(
        _ sequence: UInt64, device: DeviceRecord?, at now: DeliveryInstant, direct: Bool = false,
        directContent: DisplayedContent? = nil
    ) -> [Action] {
        guard var entry = entries[sequence] else { return [] }
        entry.place = .presenting
        entry.fallback = nil
        entries[sequence] = entry
        transition(sequence, to: .delivering, at: now)
        guard entry.traits.kind == .alert else {
            finish(sequence, .deliveredSilent, detail: DeliveryRules.silentDetail(entry.traits.kind), at: now)
            return []
        }
        if direct, let directContent {
            return presented(sequence, outcome: .direct, content: directContent, at: now)
        }
        guard let record = entries[sequence]?.record else { return [] }
        return [.present(Presentation(
            sequence: sequence, record: record, traits: entry.traits, device: device, isDirect: direct))]
    }

    /// Puts a push in APNs storage for its app; of two stored pushes of one app the older is discarded.
    mutating func store(_ sequence: UInt64, at now: DeliveryInstant, transition saving: Bool) {
        guard let bundleID = entries[sequence]?.record.bundleID else { return }
        if let older = storedByApp[bundleID], older != sequence {
            guard older < sequence else {
                finish(sequence, .discarded, detail: DeliveryRules.coalesced, at: now)
                return
            }
            finish(older, .discarded, detail: DeliveryRules.coalesced, at: now)
        }
        storedByApp[bundleID] = sequence
        entries[sequence]?.place = .stored
        if saving { transition(sequence, to: .stored, detail: DeliveryRules.deviceOffline, at: now) }
    }

    /// Holds a background push on the device until the budget allows; one held per app, the newest.
    mutating func hold(_ sequence: UInt64, at now: DeliveryInstant, transition saving: Bool) {
        guard let bundleID = entries[sequence]?.record.bundleID else { return }
        if let older = heldByApp[bundleID], older != sequence {
            guard older < sequence else {
                finish(sequence, .discarded, detail: DeliveryRules.coalesced, at: now)
                return
            }
            finish(older, .discarded, detail: DeliveryRules.coalesced, at: now)
        }
        heldByApp[bundleID] = sequence
        entries[sequence]?.place = .held
        if saving {
            transition(sequence, to: .stored,
                       detail: DeliveryRules.throttled(perHour: settings.backgroundPushesPerHour), at: now)
        }
    }

    /// Joins (or opens) the low-priority batch; the batch is delivered one delay after it opened.
    mutating func deferUntilBatch(_ sequence: UInt64, at now: DeliveryInstant) {
        guard var entry = entries[sequence] else { return }
        entry.place = .deferred
        entry.record.timeline.append(TimelineEntry(
            step: DeliveryRules.deferredStep, at: now.wall, monotonic: now.monotonic,
            detail: DeliveryRules.batched(priority: entry.record.priority,
                                          delay: settings.lowPriorityDelayMilliseconds)))
        entries[sequence] = entry
        pendingSaves.append(PendingSave(record: entry.record, sequence: sequence))
        deferred.append(sequence)
        if deferredDue == nil { deferredDue = now.wall + settings.lowPriorityDelayMilliseconds }
    }

    /// Holds a push back until `due` (a fault rule's late delivery); it is routed then, as a later attempt.
    mutating func deliverLate(
        _ sequence: UInt64, until due: Int64, fault: AppliedFault, milliseconds: Int64, at now: DeliveryInstant
    ) {
        guard var entry = entries[sequence] else { return }
        entry.place = .deferred
        entry.record.timeline.append(TimelineEntry(
            step: DeliveryRules.lateStep, at: now.wall, monotonic: now.monotonic,
            detail: DeliveryRules.late(by: fault, milliseconds: milliseconds)))
        entries[sequence] = entry
        pendingSaves.append(PendingSave(record: entry.record, sequence: sequence))
        late[sequence] = due
    }

    /// Routes the pushes a fault held back whose time has come (oldest first).
    mutating func releaseLate(device: DeviceRecord?, at now: DeliveryInstant) -> [Action] {
        let due = late.filter { $0.value <= now.wall }.keys.sorted()
        var actions: [Action] = []
        for sequence in due {
            late[sequence] = nil
            actions += route(sequence, device: device, at: now, isFirstAttempt: false)
        }
        return actions
    }

    /// Delivers held background pushes (oldest first) while the device is online and the budget allows.
    mutating func releaseHeld(device: DeviceRecord?, at now: DeliveryInstant) -> [Action] {
        guard isOnline else { return [] }
        var actions: [Action] = []
        for (bundleID, sequence) in heldByApp.sorted(by: { $0.value < $1.value })
        where settings.backgroundPushesPerHour <= 0
            || pruneBudget(bundleID, at: now.wall) < settings.backgroundPushesPerHour
        {
            heldByApp[bundleID] = nil
            actions += route(sequence, device: device, at: now, isFirstAttempt: false)
        }
        return actions
    }

    /// Drops background deliveries older than an hour; returns how many remain for the app.
    mutating func pruneBudget(_ bundleID: String, at now: Int64) -> Int {
        guard var times = backgroundDeliveries[bundleID] else { return 0 }
        times.removeAll { $0 <= now - DeliveryRules.hourMilliseconds }
        backgroundDeliveries[bundleID] = times.isEmpty ? nil : times
        return times.count
    }

    /// When the app's background budget next has room (wall ms), or nil when it has room now.
    func budgetFreesUp(_ bundleID: String) -> Int64? {
        let limit = settings.backgroundPushesPerHour
        guard limit > 0, let times = backgroundDeliveries[bundleID], times.count >= limit else { return nil }
        return times[times.count - limit] + DeliveryRules.hourMilliseconds
    }

    /// Whether the device record says the app was removed at or before `wall` (ms); an app it does not list
    /// counts as installed. Also the shell's (``DeliveryEngine/mayShowAtOnce(_:traits:device:)``).
    static func isUninstalled(_ bundleID: String, device: DeviceRecord?, atWall wall: Int64) -> Bool {
        guard let app = device?.apps.first(where: { $0.bundleID == bundleID }), let removed = app.uninstalledAt
        else { return false }
        return removed <= wall
    }

    func isUninstalled(_ bundleID: String, device: DeviceRecord?, at now: DeliveryInstant) -> Bool {
        Self.isUninstalled(bundleID, device: device, atWall: now.wall)
    }

    // MARK: - Transitions and saves

    /// Forgets a push's entry; with the last one gone the table's room goes too (an idle slot its shard keeps
    /// would otherwise hold room for pushes it no longer has: 1.3 KB for one).
    mutating func dropEntry(_ sequence: UInt64) {
        entries[sequence] = nil
        if entries.isEmpty { entries = [:] }
    }

    /// Moves a push to `status`, appends the timeline entry and queues the save.
    mutating func transition(
        _ sequence: UInt64, to status: NotificationStatus, detail: String? = nil, at now: DeliveryInstant
    ) {
        guard var entry = entries[sequence] else { return }
        entry.record.status = status
        entry.record.timeline.append(TimelineEntry(step: status.rawValue, at: now.wall, monotonic: now.monotonic,
                                                   detail: detail))
        pendingSaves.append(PendingSave(
            record: entry.record, sequence: sequence, event: NotificationEvents.draft(for: entry.record)))
        if status.isFinal {
            dropEntry(sequence)
        } else {
            entries[sequence] = entry
        }
    }

    /// Moves a push to a final status and forgets it: out of storage, the hold and the batch.
    mutating func finish(
        _ sequence: UInt64, _ status: NotificationStatus, detail: String?, at now: DeliveryInstant
    ) {
        guard let entry = entries[sequence] else { return }
        let bundleID = entry.record.bundleID
        if storedByApp[bundleID] == sequence { storedByApp[bundleID] = nil }
        if heldByApp[bundleID] == sequence { heldByApp[bundleID] = nil }
        if entry.place == .deferred {
            deferred.removeAll { $0 == sequence }
            if deferred.isEmpty { deferredDue = nil }
            late[sequence] = nil
        }
        transition(sequence, to: status, detail: detail, at: now)
    }

    /// The next batch to save, when none is in flight and no retry is waiting.
    mutating func takeSave() -> [Action] {
        guard inFlight == nil, saveRetryAt == nil, !pendingSaves.isEmpty else { return [] }
        let batch = pendingSaves
        pendingSaves = []
        inFlight = batch
        return [.save(batch.map(\.record), events: batch.compactMap(\.event))]
    }

    /// The batch in flight committed (or failed). Committed acceptances are routed now; the next batch
    /// waits for ``saveEmitted()``.
    mutating func saveCompleted(
        _ result: Result<Void, any Error>, device: DeviceRecord?, at now: DeliveryInstant
    ) -> (SaveReport, [Action]) {
        guard let batch = inFlight else { return (SaveReport(), []) }
        var report = SaveReport()
        var actions: [Action] = []
        switch result {
        case .success:
            report.committed = batch.map(\.record)
            for item in batch {
                if let completion = item.completion { report.completions.append((completion, .success(()))) }
            }
            for item in batch where item.startsExtension {
                // Still waiting for this commit (not finished by the watchdog meanwhile): start it now.
                guard var entry = entries[item.sequence], entry.place == .presenting,
                    entry.record.status == .extensionRunning, var start = entry.pendingStart
                else { continue }
                entry.pendingStart = nil
                entries[item.sequence] = entry
                start.record = entry.record
                actions.append(.runExtension(start))
            }
            for item in batch {
                guard let sequence = item.acceptedSequence, entries[sequence]?.place == .committing else { continue }
                acceptancesAwaitingCommit -= 1
                actions += route(sequence, device: device, at: now, isFirstAttempt: true)
            }
        case .failure(let error):
            // Pushes whose acceptance failed are dropped, with any saves of their delivery.
            let dropped = Set(batch.compactMap(\.acceptedSequence))
            acceptancesAwaitingCommit -= dropped.count { entries[$0]?.place == .committing }
            var retry: [PendingSave] = []
            for item in batch {
                if let completion = item.completion { report.completions.append((completion, .failure(error))) }
                if dropped.contains(item.sequence) {
                    dropEntry(item.sequence)
                } else if !item.isForgotten {
                    retry.append(item)
                }
            }
            pendingSaves.removeAll { dropped.contains($0.sequence) }
            if !retry.isEmpty {
                pendingSaves = retry + pendingSaves
                saveRetryAt = now.wall + settings.saveRetryMilliseconds
            }
        }
        return (report, actions)
    }

    /// The shell has taken the last batch's report (completions and change notifications to send in
    /// commit order): the next batch may go.
    mutating func saveEmitted() -> [Action] {
        inFlight = nil
        return takeSave()
    }
}
