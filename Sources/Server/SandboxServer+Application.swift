// APNs Sandbox — the simulated world and the services that steer it, built from the configuration: everything of
// the server but HTTP (routes, the provider endpoint, listeners).
import APNsProtocol
import Events
import ExtensionRuntime
import Intake
import Sandbox
import Store
import Support
import Webhooks

extension SandboxServer {
    /// The parts of the sandbox that are not HTTP, built as values in dependency order (nothing runs: the stores
    /// are not open, no thread or timer exists): the stores, the clock, fault rules, the event fan-out (SSE hub
    /// and webhooks), the extension runtime, the delivery engine, the device registry and its loader, the
    /// services of the API (devices, clock), attachments and retention, the push log and the provider keys.
    ///
    /// `SandboxServer.init` builds one, then the HTTP side over it (SandboxServer+Routes.swift), then the
    /// services that start and stop it all (SandboxServer+Services.swift).
    struct Application: Sendable {
        let stores: Stores
        var store: any SandboxStore { stores.store }
        var outbox: any OutboxStore { stores.outbox }
        /// Time and timers of delivery, extensions, webhooks and retention.
        let clock: any SandboxClock
        let clockService: ClockService
        let faults: FaultService
        /// Long-polls waiting for a notification's next state (`?wait=`).
        let waiters: NotificationWaiters
        /// Logs events in the store (an event reaches `eventHub` and `webhooks` once committed).
        let recorder: EventRecorder
        let eventHub: EventStreamHub
        let webhookSender: CurlWebhookSender
        let webhooks: WebhookDispatcher
        let extensions: ExtensionRuntime
        /// The programs exec extensions may run.
        let execPolicy: ExecPolicy
        let engine: DeliveryEngine
        let registry: DeviceRegistry
        let registryLoader: RegistryLoader
        let devices: DeviceService
        let attachments: AttachmentSweeper
        let retention: Retention
        /// Every push the endpoint received, newest first, in memory.
        let pushes: RecentPushes
        let keys: ProviderKeyStore

        /// Builds every part; `metrics` counts webhook attempts, notification changes and extension runs.
        /// - Throws: ``StoreError`` for a store path that cannot be used, ``ConfigurationError`` for fault rules or
        ///   provider keys that cannot be read.
        init(_ configuration: SandboxConfiguration, logger: Logger, metrics: SandboxMetrics) throws {
            let dataDirectory = configuration.dataDirectory
            stores = try SandboxServer.makeStores(configuration, logger: logger)
            let store = stores.store
            let clock = ClockService.makeClock(configuration.clock)
            self.clock = clock
            faults = try FaultService(configuration: configuration, clock: clock)

            // Events: the SSE hub and the webhook dispatcher are fed every committed event, in commit order —
            // registered before anything logs one (recovery, seeding).
            let eventHub = EventStreamHub(
                log: store, heartbeatSeconds: configuration.events.heartbeatSeconds.amount,
                capacity: EventStreamHub.Capacity(
                    maxStreams: configuration.limits.maxEventStreams,
                    maxStreamsPerClient: configuration.limits.maxEventStreamsPerClient),
                logger: logger.with("component", "events"))
            self.eventHub = eventHub
            webhookSender = CurlWebhookSender()
            let webhooks = WebhookDispatcher(
                settings: configuration.webhooks.settings, repository: stores.outbox, eventLog: store, sender: webhookSender,
                clock: clock, logger: logger.with("component", "webhooks"), onAttempt: { metrics.webhookAttempted($0) })
            self.webhooks = webhooks
            store.observeEvents { events in
                eventHub.publish(events)
                if let last = events.last { webhooks.eventsCommitted(upTo: last.id) }
            }
            let recorder = EventRecorder(log: store, logger: logger.with("component", "events"))
            self.recorder = recorder

            // Delivery: service extensions, then the engine that runs them per notification.
            execPolicy = SandboxServer.execPolicy(from: configuration)
            extensions = ExtensionRuntime(
                configuration: Self.runtimeConfiguration(configuration, execPolicy: execPolicy), clock: clock,
                logger: logger.with("component", "extensions"))
            var deliveryConfiguration = DeliveryEngine.Configuration()
            deliveryConfiguration.lowPriorityDelayMilliseconds = configuration.delivery.lowPriorityDelayMilliseconds.milliseconds
            deliveryConfiguration.backgroundPushesPerHour = configuration.delivery.backgroundPushesPerHour
            let waiters = NotificationWaiters()
            self.waiters = waiters
            let engine = DeliveryEngine(
                configuration: deliveryConfiguration, clock: clock, notifications: store, devices: store,
                serviceExtensionRunner: MeasuredExtensionRunner(runner: extensions, metrics: metrics, clock: clock),
                onChange: { waiters.notify($0); metrics.notificationChanged($0) })
            self.engine = engine

            // Devices: the registry the provider endpoint resolves pushes against, its loader, the API's service.
            registry = DeviceRegistry(unknownTokenPolicy: configuration.apns.unknownDeviceTokens)
            devices = DeviceService(
                registry: registry, devices: store, engine: engine, clock: clock, events: recorder,
                logger: logger.with("component", "devices"))
            registryLoader = RegistryLoader(registry: registry, devices: store, logger: logger.with("component", "devices"))

            // Files and age: attachments of removed notifications, retention's pruning.
            let attachments = AttachmentSweeper(
                root: dataDirectory + "/attachments", layout: .attachmentStore, logger: logger
            ) { apnsID, deviceToken in
                try store.containsNotification(apnsID: apnsID, deviceToken: deviceToken)
            }
            self.attachments = attachments
            // The memory journal's bound drops records as pushes come: their attachment files go with them.
            stores.journal?.observeDrops { attachments.removed($0) }
            let retention = Retention(
                store: store, outbox: stores.outbox, clock: clock, settings: Retention.Settings(configuration),
                attachments: attachments, logger: logger)
            self.retention = retention
            // After a jump of a virtual clock what became old is pruned at once, not an interval later.
            clockService = ClockService(
                clock: clock, events: recorder, settle: { engine.waitUntilAllSettled() }, onChange: { retention.pruneSoon() })

            pushes = RecentPushes(capacity: configuration.apns.recentPushCapacity)
            keys = try ProviderKeyStore(teams: configuration.teams, baseDirectory: configuration.baseDirectory)
        }

        /// The extension runtime's settings from `extensions`.
        static func runtimeConfiguration(_ configuration: SandboxConfiguration, execPolicy: ExecPolicy) -> RuntimeConfiguration {
            var runtime = RuntimeConfiguration(dataDirectory: configuration.dataDirectory)
            runtime.defaultBudgetMilliseconds = configuration.extensions.defaultBudgetMilliseconds.milliseconds
            runtime.defaultGraceMilliseconds = configuration.extensions.defaultGraceMilliseconds.milliseconds
            runtime.allowBudgetHeader = configuration.extensions.allowBudgetHeader
            runtime.maxConcurrentInstances = configuration.extensions.maxConcurrentInstances
            runtime.execPolicy = execPolicy
            return runtime
        }
    }
}
