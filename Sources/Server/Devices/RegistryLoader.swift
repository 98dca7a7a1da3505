// APNs Sandbox — the stored devices into the registry: the first batch at start, the rest while the server answers.
import APNsProtocol
import Dispatch
import Foundation
import Sandbox
import Support
import Synchronization

/// Fills the ``DeviceRegistry`` from the store without making the start wait for every device: ``start()`` reads
/// the first batch (all of a store of up to `batchSize` devices: the registry is then complete before anything is
/// served, as it always was), and the rest on a queue of its own, one short read per batch so the API's reads are
/// not held up. Until the last batch is in, a push or a validation to a token the registry does not hold waits for
/// one lookup of that token in the store (``fill(_:then:)``) instead of being taken for an unknown token.
/// A batch that fails to read is tried again a second later (lookups go on meanwhile).
final class RegistryLoader: Service {
    let name = "device registry"
    let registry: DeviceRegistry
    let devices: any DeviceRepository
    let logger: Logger
    /// Devices read per batch, and what runs before each batch after the first (tests hold the load there).
    struct Tuning: Sendable {
        /// 4,096 take ~8 ms to read and add here (the first batch delays the start by that).
        var batchSize = 4_096
        /// Called on the loader's queue with the count loaded so far.
        var beforeBatch: (@Sendable (Int) -> Void)?
    }

    private let tuning = Locked(Tuning())
    private let queue = DispatchQueue(label: "apns-sandbox.registry-load")
    /// One lookup at a time, in the order the pushes came (the store reads them one by one anyway).
    private let lookups = DispatchQueue(label: "apns-sandbox.registry-lookups")
    private let stopping = Atomic<Bool>(false)
    private let running = DispatchGroup()
    /// Tokens with pushes waiting on the lookup queue: a later push to one of them queues behind them (else it
    /// could be accepted first, on its loop, while the earlier one waits).
    private let queued = Locked<[DeviceToken: Int]>([:])

    init(registry: DeviceRegistry, devices: any DeviceRepository, logger: Logger) {
        self.registry = registry
        self.devices = devices
        self.logger = logger
    }

    /// Changes the batches (before ``start()``: tests).
    func tune(_ change: (inout Tuning) -> Void) {
        tuning.withLock { change(&$0) }
    }

    func start() throws {
        let started = MonotonicClock.seconds()
        let (batchSize, beforeBatch) = tuning.withLock { (max($0.batchSize, 1), $0.beforeBatch) }
        // A bound far above the count (most devices deleted, the newest kept) would reserve room for nothing:
        // at most 2M devices (about 130 MB of packed entries, keys and index), the table grows past that as it would.
        registry.reserveDeviceCapacity(min(try devices.deviceCountBound(), 1 << 21))
        registry.beginLoading()
        let first = try devices.devices(after: 0, limit: batchSize)
        registry.load(first.records.compactMap(DeviceService.device(from:)))
        reportUnreadable(first.unreadable)
        guard let cursor = first.next else {
            registry.finishLoading()
            return
        }
        logger.notice("loading the stored devices while serving: a push to a device not loaded yet waits for its lookup", [
            ("loaded", "\(first.records.count)"),
        ])
        running.enter()
        queue.async { [self] in
            defer { running.leave() }
            loadRest(after: cursor, loaded: first.records.count, batchSize: batchSize, beforeBatch: beforeBatch, started: started)
        }
    }

    /// Ends the background load (after its current batch) and waits for it and for the lookups queued (each
    /// answers at once from now on: 500, the server is stopping).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        running.wait()
        lookups.sync {}
    }

    private func reportUnreadable(_ count: Int) {
        guard count > 0 else { return }
        logger.error("stored devices could not be read (damaged rows) and are left out of the registry", [
            ("devices", "\(count)"),
        ])
    }

    private func loadRest(
        after start: Int64, loaded alreadyLoaded: Int, batchSize: Int, beforeBatch: (@Sendable (Int) -> Void)?,
        started: Double
    ) {
        var cursor = start
        var loaded = alreadyLoaded
        while !stopping.load(ordering: .relaxed) {
            beforeBatch?(loaded)
            do {
                let batch = try devices.devices(after: cursor, limit: batchSize)
                registry.load(batch.records.compactMap(DeviceService.device(from:)))
                reportUnreadable(batch.unreadable)
                loaded += batch.records.count
                guard let next = batch.next else {
                    registry.finishLoading()
                    logger.notice("stored devices loaded", [
                        ("devices", "\(loaded)"), ("seconds", "\(Self.rounded(MonotonicClock.seconds() - started))"),
                    ])
                    return
                }
                cursor = next
            } catch {
                logger.error("reading the stored devices failed; trying again in 1 s (pushes to devices not loaded yet are looked up one by one)", [
                    ("loaded", "\(loaded)"), ("error", "\(error)"),
                ])
                for _ in 0..<20 where !stopping.load(ordering: .relaxed) { usleep(50_000) }
            }
        }
    }

    private static func rounded(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    /// Whether a push to `token` must go through ``fill(_:then:)`` (only while loading): the token is not loaded yet,
    /// or an earlier push to it is still queued there.
    func mustWait(_ token: DeviceToken) -> Bool {
        guard registry.isLoading else { return false }
        return queued.withLock { $0[token] != nil } || registry.needsLookup(token)
    }

    /// Looks `token` up in the store (unless the registry already answers for it) and gives the registry what it
    /// found, then calls `then` on the lookup queue, in the order of the calls: true when the registry can now answer
    /// for the token, false when the store could not be read (logged) or the server is stopping. What `then` starts
    /// synchronously (a push handed to the delivery engine) is done before a later push to the token goes by.
    func fill(_ token: DeviceToken, then: @escaping @Sendable (Bool) -> Void) {
        queued.withLock { $0[token, default: 0] += 1 }
        lookups.async { [self] in
            then(!stopping.load(ordering: .relaxed) && fillNow(token))
            queued.withLock { queued in
                if let count = queued[token], count > 1 { queued[token] = count - 1 } else { queued[token] = nil }
            }
        }
    }

    /// ``fill(_:then:)`` on the calling thread (a worker's, never an event loop's). - Returns: as `then` gets.
    func fillNow(_ token: DeviceToken) -> Bool {
        guard registry.needsLookup(token) else { return true }
        do {
            registry.adopt(try devices.device(token: token.hex).flatMap(DeviceService.device(from:)), for: token)
            return true
        } catch {
            logger.error("looking up a device not loaded yet failed", [
                ("device.token_prefix", String(token.hex.prefix(8))), ("error", "\(error)"),
            ])
            return false
        }
    }
}
