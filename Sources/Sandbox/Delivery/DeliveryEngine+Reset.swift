// APNs Sandbox — the delivery engine's part in a reset of the sandbox and in restoring a snapshot.

extension DeliveryEngine {
    /// Which pushes a reset takes from the engine.
    public struct ResetSelection: Sendable, Equatable {
        /// Every push on these devices (nil: no device as such).
        public var deviceTokens: Set<String>?
        /// Every push of these apps, on any device (nil: no app as such).
        public var bundleIDs: Set<String>?

        /// Every push on every device.
        public static let everything = ResetSelection(deviceTokens: nil, bundleIDs: nil, isEverything: true)

        let isEverything: Bool

        public init(deviceTokens: Set<String>? = nil, bundleIDs: Set<String>? = nil) {
            self.init(deviceTokens: deviceTokens, bundleIDs: bundleIDs, isEverything: false)
        }

        private init(deviceTokens: Set<String>?, bundleIDs: Set<String>?, isEverything: Bool) {
            self.deviceTokens = deviceTokens
            self.bundleIDs = bundleIDs
            self.isEverything = isEverything
        }

        func covers(device token: String) -> Bool {
            isEverything || deviceTokens?.contains(token) == true
        }

        func covers(_ record: NotificationRecord) -> Bool {
            covers(device: record.deviceToken) || bundleIDs?.contains(record.bundleID) == true
        }

        func coversBudget(of bundleID: String, onDevice token: String) -> Bool {
            covers(device: token) || bundleIDs?.contains(bundleID) == true
        }
    }

    /// Forgets the pushes `selection` covers, on every device the engine has seen: they leave storage, holds,
    /// batches and extension watchdogs, their timers go, and none of their saves still waiting is made (no
    /// record or event of theirs is written from now on); background budgets of the selection are emptied.
    /// Their saves already handed to the store are queued ahead of anything the caller queues after this
    /// returns, so a delete the caller queues next removes them for good.
    ///
    /// Acceptances not yet handed to the store are completed with success (the provider answers 200: the push
    /// was accepted, then the sandbox was reset); an extension still running for a forgotten push finishes on
    /// its own and its answer is ignored. Other pushes go on as before.
    /// - Returns: How many pushes were forgotten.
    @discardableResult
    public func forget(_ selection: ResetSelection) -> Int {
        var total = 0
        for shard in shards {
            for slot in shard.slots.withLock({ Array($0.values) }) {
                var forgotten = DeviceQueue.Forgotten()
                let token = slot.token
                let actions = step(slot) { queue, _ in
                    forgotten = queue.forget(
                        where: selection.covers, budgets: { selection.coversBudget(of: $0, onDevice: token) })
                    return []
                }
                perform(actions, on: slot)
                for completion in forgotten.completions { completion(.success(())) }
                total += forgotten.count
                retireIfIdle(slot, device: try? devices.device(token: token))
            }
        }
        return total
    }

    /// Takes each device's online state from its stored record again (online when there is none): after a
    /// reset or a restore rewrote the records behind the engine's back. A device that comes online gets what
    /// is stored for it. `tokens` nil: every device the engine has seen.
    public func resynchronize(tokens: Set<String>?) {
        var slots: [DeviceSlot] = []
        for shard in shards {
            slots += shard.slots.withLock { slots in
                tokens.map { wanted in wanted.compactMap { slots[$0] } } ?? Array(slots.values)
            }
        }
        for slot in slots {
            let device = try? devices.device(token: slot.token)
            let online = device?.isOnline ?? true
            let actions = slot.deviceWrites.withLock { _ in
                step(slot) { queue, now in
                    queue.isOnline == online ? [] : queue.setOnline(online, device: device, at: now)
                }
            }
            perform(actions, on: slot)
            retireIfIdle(slot, device: device)
        }
    }

    /// Takes over records that were written into the store directly (a snapshot restored): those that are not
    /// final go on as after a restart, without a `resumed` timeline entry, and stored ones stay exactly as they
    /// are until their device comes online or they expire.
    public func adopt(_ records: [NotificationRecord]) {
        let unfinished = records.enumerated().filter { !$0.element.status.isFinal }
            .sorted { ($0.element.receivedAt, $0.offset) < ($1.element.receivedAt, $1.offset) }
        resume(unfinished.map(\.element), resumed: nil)
    }
}
