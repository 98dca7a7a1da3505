// APNs Sandbox — what `start()` starts, in order; `shutdown()` stops it in reverse.
import Events
import ExtensionRuntime
import HTTP
import Sandbox
import Store
import Support
import Webhooks

extension SandboxServer {
    /// The parts `init` built that have something to start or stop.
    struct Parts {
        let configuration: SandboxConfiguration
        let logger: Logger
        let state: ServerState
        let directoryLock: DataDirectoryLock
        let app: Application
        let pipeline: HTTPPipeline
        let network: NetworkServices
    }

    /// The server's services in start order. `shutdown()` stops them in reverse, which is the order that
    /// matters: not ready → event streams ended (open streams would hold the drain until its deadline) →
    /// listeners drained → event loops → HTTP worker pool → webhook dispatcher → curl sender → retention →
    /// device registry load → delivery timers → webhook outbox → extension runtime → attachment sweeper → store →
    /// the lock.
    static func services(_ parts: Parts) -> ServiceGroup {
        let configuration = parts.configuration
        let logger = parts.logger
        let app = parts.app
        let clock = app.clock
        let (store, outbox, state, eventHub) = (app.store, app.outbox, parts.state, app.eventHub)
        let (lock, attachments, extensions) = (parts.directoryLock, app.attachments, app.extensions)
        let (registry, devices, engine) = (app.registry, app.devices, app.engine)
        let (retention, webhookSender, webhooks) = (app.retention, app.webhookSender, app.webhooks)
        let pipeline = parts.pipeline
        return ServiceGroup("sandbox", services: [
            // Taken by `init` (a second server is refused before it touches the directory); given up last.
            ServiceStep("data directory lock", stop: { lock.release() }),
            app.stores.storeService,
            // Queued file removals still ask the store; retries after its stop are dropped.
            ServiceStep("attachment sweeper", stop: { attachments.stop() }),
            // Kills what a previous run's extensions left, before recovery finalises what they were running.
            ServiceStep("extension runtime", start: { extensions.start() }, stop: { extensions.shutdown() }),
            app.stores.outboxService,
            ServiceStep("webhook cursors", start: {
                let rewound = try outbox.clampSubscriptionCursors(to: store.latestEventID())
                if rewound > 0 {
                    logger.warning(
                        "webhook subscriptions were ahead of the event log (the store is new or was replaced); they go on from its newest event",
                        [("subscriptions", "\(rewound)")])
                }
            }),
            ServiceStep("webhook seed", start: {
                try ConfigurationSeed.applyWebhooks(configuration.webhooks, outbox: outbox, eventLog: store, clock: clock)
            }),
            ServiceStep("configuration seed", start: {
                try ConfigurationSeed.apply(configuration, devices: devices, store: store, logger: logger)
                registry.onAutoRegister { device in devices.autoRegistered(device) }
            }),
            // After the extension runtime started: the notifications its previous run's instances were
            // running are finalised here (original-crash), not run again.
            // Recovery (and every push after it) arms device timers: expiry, storage, batches, save retries.
            // Stopping cancels them all, also when recovery itself failed halfway.
            ServiceStep("delivery timers", stop: { engine.stop() }),
            ServiceStep("recovery", start: { try engine.recover() }),
            // The first batch of stored devices now (all of a small store), the rest while the server answers; stops
            // (with its queued lookups, which hand pushes to the engine) before the engine's timers do.
            app.registryLoader,
            // Its stop is the same `close()` as "event streams" below, by then already done.
            ServiceStep("event hub", start: { eventHub.start() }, stop: { eventHub.close() }),
            ServiceStep("retention", start: { retention.start() }, stop: { retention.stop() }),
            // Its HTTP client starts its thread with the first request; stopping ends the transfers in flight.
            ServiceStep("webhook sender", stop: { webhookSender.shutdown() }),
            ServiceStep("webhook dispatcher", start: { try webhooks.start() }, stop: { webhooks.shutdown() }),
            // Its worker threads start with the first blocking request.
            ServiceStep("HTTP pipeline", stop: { pipeline.shutdown() }),
            parts.network.eventLoops,
            parts.network.listeners,
            ServiceStep("event streams", stop: { eventHub.close() }),
            ServiceStep("readiness", start: { state.setReady(true) }, stop: { state.setReady(false) }),
        ], logger: logger.with("component", "lifecycle"))
    }
}
