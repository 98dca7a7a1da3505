// APNs Sandbox — carrying out what a device's machine asks for: saves, presentations, extensions.

extension DeliveryEngine {
    /// Carries out a machine's actions in order, with no lock held.
    func perform(_ actions: [DeviceQueue.Action], on slot: DeviceSlot) {
        for action in actions {
            switch action {
            case .save(let records, let events):
                slot.beginWork()
                notifications.save(records, events: events) { [self] result in
                    hop(on: slot) { self.saveCompleted(slot, result: result) }
                    slot.endWork()
                }
            case .present(let presentation):
                present(presentation, on: slot)
            case .runExtension(let start):
                runExtension(start, on: slot)
            }
        }
    }

    /// Whether showing `record` would run the app's service extension (an alert with `mutable-content`
    /// for an app that has one, and a runner). A push that might is never delivered before its
    /// acceptance commits: its extension must not start for a push that could still be refused.
    func runsExtension(_ record: NotificationRecord, traits: PushTraits) -> Bool {
        guard extensionRunner != nil, let payload = traits.payload, payload.isMutableContent, payload.hasAlert
        else { return false }
        do {
            return try devices.app(bundleID: record.bundleID)?.serviceExtensionJSON != nil
        } catch {
            return true
        }
    }

    /// Whether a new push, delivered at once, is likely shown in the accepting step: an alert for a device
    /// that is online (or unknown) and has the app, not expired, not held back by a fault or the low-priority
    /// batch. Its content is then built before the step
    /// (``DeviceQueue/accept(_:traits:sequence:completion:deliverAtOnce:directContent:device:at:)``); the
    /// machine still decides (it also waits while an earlier acceptance commits), and a content it does not
    /// use is dropped.
    func mayShowAtOnce(_ record: NotificationRecord, traits: PushTraits, device: DeviceRecord?) -> Bool {
        guard traits.kind == .alert, device?.isOnline ?? true, record.deliveryFault == nil,
            !(traits.isLowPriority && configuration.lowPriorityDelayMilliseconds > 0)
        else { return false }
        let now = clock.nowMilliseconds
        return traits.expiryReason(at: now) == nil
            && !DeviceQueue.isUninstalled(record.bundleID, device: device, atWall: now)
    }

    /// What the device shows for `record` without a service extension, in its locale and with its app's strings.
    func originalContent(
        of record: NotificationRecord, traits: PushTraits, device: DeviceRecord?, app: AppRecord?
    ) -> DisplayedContent {
        DisplayedContentBuilder.content(
            for: record, payload: traits.payload, locale: device?.locale ?? "en_US", strings: app?.strings ?? [:])
    }

    /// Shows an alert push: through the extension when it qualifies (once `extension-running` has
    /// committed, ``runExtension(_:on:)``), else directly (`direct`); an interrupted one with its original.
    private func present(_ presentation: DeviceQueue.Presentation, on slot: DeviceSlot) {
        let record = presentation.record
        let app = try? devices.app(bundleID: record.bundleID)
        let original = originalContent(of: record, traits: presentation.traits, device: presentation.device, app: app)
        let sequence = presentation.sequence
        if presentation.wasInterrupted {
            perform(step(slot) { queue, now in
                queue.presented(sequence, outcome: .originalCrash, content: original,
                                detail: DeliveryRules.extensionInterrupted, at: now)
            }, on: slot)
            return
        }
        guard !presentation.isDirect, extensionRunner != nil, let app, app.serviceExtensionJSON != nil,
            let payload = presentation.traits.payload, payload.isMutableContent, payload.hasAlert
        else {
            perform(step(slot) { queue, now in
                queue.presented(sequence, outcome: .direct, content: original, at: now)
            }, on: slot)
            return
        }
        let start = DeviceQueue.ExtensionStart(
            sequence: sequence, record: record, original: original, device: presentation.device, app: app)
        perform(step(slot) { queue, now in queue.extensionRequested(sequence, start, at: now) }, on: slot)
    }

    /// Runs the extension of a push whose `extension-running` has committed; its answer is shown.
    private func runExtension(_ start: DeviceQueue.ExtensionStart, on slot: DeviceSlot) {
        let (sequence, running, original, app) = (start.sequence, start.record, start.original, start.app)
        guard let runner = extensionRunner else { return }
        let device = start.device
            ?? DeviceRecord(token: running.deviceToken, environment: running.environment)
        if let reporting = runner as? any ReportingServiceExtensionRunner {
            // The instance's own events (steps, timeWillExpire, late handler calls, attachments,
            // stderr) go into the timeline before `displayed`.
            reporting.run(running, original: original, device: device, app: app) { [self] result in
                perform(step(slot) { queue, now in
                    queue.presented(sequence, outcome: result.outcome, content: result.content, notes: result.timeline, at: now)
                }, on: slot)
            }
        } else {
            runner.run(running, original: original, device: device, app: app) { [self] outcome, content in
                perform(step(slot) { queue, now in
                    queue.presented(sequence, outcome: outcome, content: content, at: now)
                }, on: slot)
            }
        }
    }
}
