// APNs Sandbox — finding a device's slot, and letting idle ones go so that a million devices cost no more than
// their records.
import Synchronization

extension DeliveryEngine {
    func shard(for token: String) -> SlotShard {
        shards[Int(UInt(bitPattern: token.hashValue) % UInt(shards.count))]
    }

    /// Steps the device's machine (its slot created when there is none) and carries out the actions. A slot
    /// retired between the lookup and the step is looked up again: the step runs on the device's live slot.
    func liveStep(token: String, _ body: (inout DeviceQueue, DeliveryInstant) -> [DeviceQueue.Action]) {
        while true {
            let slot = slot(for: token)
            if let actions = stepIfLive(slot, body) {
                perform(actions, on: slot)
                return
            }
        }
    }

    /// Runs `body` under the device's record-write lock on its live slot (looked up again when the slot was
    /// retired before the lock was taken; a slot is never retired while that lock is held).
    func liveDeviceWrite(
        token: String, _ body: (DeviceSlot) throws -> [DeviceQueue.Action]
    ) throws -> (DeviceSlot, [DeviceQueue.Action]) {
        while true {
            let slot = slot(for: token)
            let actions: [DeviceQueue.Action]? = try slot.deviceWrites.withLock { _ in
                guard !slot.state.withLock({ $0.isRetired }) else { return nil }
                return try body(slot)
            }
            if let actions { return (slot, actions) }
        }
    }

    /// Lets the slot go, once its shard holds more than ``Configuration/idleSlotsKeptPerShard``, when its machine is idle (``DeviceQueue/isIdle``: nothing a new slot for the device
    /// would not start with, given its record's online state), no timer is armed, no report waits and nobody
    /// writes the device record: the device's next event makes a new slot. A step that still holds the old
    /// slot finds it retired and takes the new one (``liveStep(token:_:)``).
    func retireIfIdle(_ slot: DeviceSlot, device: DeviceRecord?) {
        guard device?.isOnline ?? true else { return }
        let shard = shard(for: slot.token)
        let kept = configuration.idleSlotsKeptPerShard
        // A shard that keeps all its slots costs no lock; a busy device (most saves) one look under its own.
        // A stale count (slots made meanwhile) only skips this retirement: the slot goes after a later event,
        // as one that went idle while its shard was under the bound always did.
        guard shard.count.load(ordering: .relaxed) > kept else { return }
        let now = clock.nowMilliseconds
        guard slot.state.withLock({ $0.queue.isIdle(at: now) && $0.timer == nil }) else { return }
        shard.slots.withLock { slots in
            guard slots.count > kept, slots[slot.token] === slot else { return }
            let retired = slot.deviceWrites.withLockIfAvailable { _ in
                slot.state.withLock { state -> Bool in
                    guard !state.isRetired, state.queue.isIdle(at: now), state.timer == nil,
                        slot.emissions.withLock({ $0.reports.isEmpty && !$0.isDraining })
                    else { return false }
                    state.isRetired = true
                    return true
                }
            } ?? false
            if retired {
                slots[slot.token] = nil
                shard.count.store(slots.count, ordering: .relaxed)
                shard.retirements.add(1, ordering: .releasing)
            }
        }
    }

    /// Device slots the engine holds now (idle devices have none).
    public var slotCount: Int {
        shards.reduce(0) { $0 + $1.slots.withLock { $0.count } }
    }
}
