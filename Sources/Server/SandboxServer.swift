// APNs Sandbox — wiring: configuration → certificates → routes → listeners, and shutdown.
import APNsProtocol
import Crypto
import Events
import ExtensionRuntime
import Foundation
import HTTP
import Sandbox
import Store
import Support
import Synchronization
import Transport
import Webhooks

/// The running sandbox: event loops, listeners and routes built from a `SandboxConfiguration`.
///
/// `start()` binds every listener (port 0 picks a free port; `listeners` tells which) and returns
/// at once; `shutdown()` drains gracefully and stops the loops. Used by the CLI and by tests.
public final class SandboxServer: Sendable {
    public let configuration: SandboxConfiguration
    public let logger: Logger
    public let state = ServerState()
    /// The TLS files in use (generated or user-supplied).
    public let tlsFiles: ServerTLSFiles
    /// Apps and devices the provider endpoint resolves pushes against.
    public let registry: DeviceRegistry
    /// Every push the endpoint received (accepted or rejected), newest first, in memory.
    public let pushes: RecentPushes
    /// Durable notifications, devices and apps.
    public let store: SQLiteStore
    /// The webhook outbox: subscriptions and deliveries (`webhooks.sqlite` in the data directory).
    public let outbox: SQLiteStore
    static let outboxFile = "webhooks.sqlite"
    /// Delivery to the simulated devices.
    public let engine: DeliveryEngine
    /// Service extension instances.
    public let extensions: ExtensionRuntime
    /// Delivers events to webhook subscriptions.
    public let webhooks: WebhookDispatcher
    let eventHub: EventStreamHub
    private let webhookSender: CurlWebhookSender
    private let clock: SystemClock
    /// Held from the start of `init` until the end of `shutdown()` (or until the object goes).
    private let directoryLock: DataDirectoryLock
    private let retention: Retention
    private let group: EventLoopGroup
    private let server: TCPServer
    private let pipeline: HTTPPipeline

    public init(configuration: SandboxConfiguration, logger: Logger) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        let dataDirectory = configuration.dataDirectory
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        // First, before anything that cleans up after an earlier run (extension processes, recovery): a
        // second server on this directory would undo the work of the one running.
        directoryLock = try DataDirectoryLock(directory: dataDirectory)

        let generated = try CertificateAuthority.ensureServerCertificate(
            in: dataDirectory, extraNames: configuration.tls.extraNames)
        if let certificate = configuration.tls.certificateFile, let key = configuration.tls.privateKeyFile {
            tlsFiles = ServerTLSFiles(caCertificate: generated.caCertificate, certificateChain: certificate, privateKey: key)
        } else {
            tlsFiles = generated
        }
        let needsTLS = configuration.listeners.contains { $0.tls }
        // Clients may present a certificate issued by the sandbox CA (APNs certificate auth).
        let tlsContext = needsTLS
            ? try TLSContext(
                certificateChainFile: tlsFiles.certificateChain, privateKeyFile: tlsFiles.privateKey,
                clientCAFile: generated.caCertificate)
            : nil
        guard let caPEM = FileManager.default.contents(atPath: tlsFiles.caCertificate) else {
            throw ConfigurationError("cannot read CA certificate \(tlsFiles.caCertificate)")
        }

        let settings = configuration.apns
        let storePath = configuration.storage.file.hasPrefix("/")
            ? configuration.storage.file : dataDirectory + "/" + configuration.storage.file
        let storage = configuration.storage
        let store = try Self.openStore(
            StoreFile(
                role: "store", path: storePath, synchronous: storage.synchronous.sqlite,
                maxSizeBytes: storage.maxSizeBytes),
            settings: storage, logger: logger)
        Self.logHealthChanges(of: store, role: "store", logger: logger)
        self.store = store
        let clock = SystemClock()
        self.clock = clock
        let waiters = NotificationWaiters()
        let eventHub = EventStreamHub(
            log: store, heartbeatSeconds: configuration.events.heartbeatSeconds.amount,
            capacity: EventStreamHub.Capacity(
                maxStreams: configuration.limits.maxEventStreams,
                maxStreamsPerClient: configuration.limits.maxEventStreamsPerClient),
            logger: logger.with("component", "events"))
        self.eventHub = eventHub
        let webhookSettings = configuration.webhooks.settings
        // The webhook outbox has a database file and a writer thread of its own, so its writes never
        // queue with pushes' commits. `normal` sync is enough: the events it is fed from are in the main
        // store (committed with their pushes), and a cursor or result lost with the machine's power is
        // fanned out or attempted again (at least once). The file has the main store's schema; only its
        // webhook tables are used.
        let outbox = try Self.openStore(
            StoreFile(
                role: "webhook outbox", path: dataDirectory + "/" + Self.outboxFile, synchronous: .normal,
                writerNiceness: WebhookDispatcher.niceness),
            settings: storage, logger: logger)
        Self.logHealthChanges(of: outbox, role: "webhook outbox", logger: logger)
        self.outbox = outbox
        let webhookSender = CurlWebhookSender()
        self.webhookSender = webhookSender
        let webhooks = WebhookDispatcher(
            settings: webhookSettings, repository: outbox, eventLog: store, sender: webhookSender,
            clock: clock, logger: logger.with("component", "webhooks"))
        self.webhooks = webhooks
        // Before anything logs events (recovery, seeding): every committed event reaches both.
        store.observeEvents { events in
            eventHub.publish(events)
            if let last = events.last { webhooks.eventsCommitted(upTo: last.id) }
        }
        let rewound = try outbox.clampSubscriptionCursors(to: store.latestEventID())
        if rewound > 0 {
            logger.warning(
                "webhook subscriptions were ahead of the event log (the store is new or was replaced); they go on from its newest event",
                [("subscriptions", "\(rewound)")])
        }
        try ConfigurationSeed.applyWebhooks(configuration.webhooks, outbox: outbox, eventLog: store, clock: clock)
        let recorder = EventRecorder(log: store, logger: logger.with("component", "events"))
        var deliveryConfiguration = DeliveryEngine.Configuration()
        deliveryConfiguration.lowPriorityDelayMilliseconds = configuration.delivery.lowPriorityDelayMilliseconds.milliseconds
        deliveryConfiguration.backgroundPushesPerHour = configuration.delivery.backgroundPushesPerHour
        var runtimeConfiguration = RuntimeConfiguration(dataDirectory: dataDirectory)
        runtimeConfiguration.defaultBudgetMilliseconds = configuration.extensions.defaultBudgetMilliseconds.milliseconds
        runtimeConfiguration.defaultGraceMilliseconds = configuration.extensions.defaultGraceMilliseconds.milliseconds
        runtimeConfiguration.allowBudgetHeader = configuration.extensions.allowBudgetHeader
        runtimeConfiguration.maxConcurrentInstances = configuration.extensions.maxConcurrentInstances
        let execPolicy = Self.execPolicy(from: configuration)
        runtimeConfiguration.execPolicy = execPolicy
        let extensions = ExtensionRuntime(
            configuration: runtimeConfiguration, clock: clock, logger: logger.with("component", "extensions"))
        self.extensions = extensions
        let engine = DeliveryEngine(
            configuration: deliveryConfiguration, clock: clock, notifications: store, devices: store,
            serviceExtensionRunner: extensions, onChange: { waiters.notify($0) })
        self.engine = engine

        registry = DeviceRegistry(unknownTokenPolicy: settings.unknownDeviceTokens)
        let devices = DeviceService(
            registry: registry, devices: store, engine: engine, clock: clock, events: recorder,
            logger: logger.with("component", "devices"))
        try ConfigurationSeed.apply(configuration, devices: devices, store: store, logger: logger)
        registry.onAutoRegister { device in devices.autoRegistered(device) }
        // After `extensions` was created: it killed what a previous run's extensions left, and the
        // notifications they were running are finalised here (original-crash), not run again.
        try engine.recover()
        retention = Retention(
            store: store, outbox: outbox, clock: clock, settings: configuration.storage, events: configuration.events,
            webhooks: webhookSettings, attachmentsDirectory: dataDirectory + "/attachments", logger: logger)
        pushes = RecentPushes(capacity: settings.recentPushCapacity)
        let keys = try ProviderKeyStore(teams: configuration.teams, baseDirectory: configuration.baseDirectory)
        Self.warnAboutPublicKeys(configuration, logger: logger)
        var listenerEnvironments: [String: APNsEnvironment] = [:]
        for listener in configuration.listeners {
            if let environment = listener.environment {
                listenerEnvironments[listener.name] = environment
            }
        }
        let provider = ProviderEndpoint(
            keys: keys, registry: registry, sink: RecordingPushSink(recent: pushes, events: recorder), settings: settings, listenerEnvironments: listenerEnvironments,
            receiver: engine, clock: clock, logger: logger.with("component", "provider"))

        var router = Router(errors: ErrorResponder(logger: logger.with("component", "api")))
        provider.register(on: &router)  // first: the hot path matches at once
        HealthRoutes.register(on: &router, state: state, caCertificatePEM: Array(caPEM))
        PushLogRoutes.register(on: &router, pushes: pushes)
        CredentialRoutes.register(on: &router, dataDirectory: dataDirectory)
        let attachments = retention.attachments
        NotificationRoutes(notifications: store, waiters: waiters, dataDirectory: dataDirectory,
                           onDelete: { removed in attachments.removed(removed) }).register(on: &router)
        DeviceRoutes(service: devices).register(on: &router)
        AppRoutes(devices: store, registry: registry, execPolicy: execPolicy).register(on: &router)
        EventRoutes(hub: eventHub).register(on: &router)
        WebhookRoutes(repository: outbox, dispatcher: webhooks).register(on: &router)
        OpenAPIDocument.register(on: &router)

        var options = Self.httpOptions(from: configuration)
        options.oversizedBodyResponder = { request in provider.answerOversized(request) }
        options.oversizedHeadersResponder = { request in provider.answerOversizedHeaders(request) }
        let streamsBeforeAuthentication = UInt32(clamping: max(0, settings.streamsBeforeAuthentication))
        let fullStreams = options.maxConcurrentStreams
        if streamsBeforeAuthentication > 0 {
            // APNs: one stream until a valid provider token; certificate connections start open.
            options.initialMaxConcurrentStreams = { info in
                info.peerCertificate?.isTrusted == true ? fullStreams : min(streamsBeforeAuthentication, fullStreams)
            }
            options.initialStreamLimitExplanation =
                "APNs allows \(streamsBeforeAuthentication) stream(s) until a push with a valid provider token "
                + "(apns.streamsBeforeAuthentication); for load tools that open many streams before reading "
                + "SETTINGS start with APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION=0"
        }
        let access = try AdminAccessPolicy.make(configuration: configuration, logger: logger.with("component", "admin"))
        let pipeline = HTTPPipeline(
            responder: AdminGuard(policy: access, next: router), options: options, logger: logger.with("component", "http"))
        self.pipeline = pipeline
        group = try EventLoopGroup(count: configuration.eventLoops)
        var serverConfiguration = TCPServer.Configuration(
            listeners: configuration.listeners.map {
                ListenerConfiguration(name: $0.name, host: $0.host, port: $0.port, tls: $0.tls ? tlsContext : nil)
            })
        serverConfiguration.maxConnections = configuration.limits.maxConnections
        serverConfiguration.maxConnectionsPerClient = configuration.limits.maxConnectionsPerClient
        serverConfiguration.connectionLimits.handshakeTimeout = configuration.limits.requestTimeoutSeconds.nanoseconds
        serverConfiguration.connectionLimits.writeStallTimeout = options.sendTimeout
        server = TCPServer(
            configuration: serverConfiguration, loops: group.loops, factory: HTTPConnectionFactory(pipeline: pipeline),
            logger: logger.with("component", "transport"))
        state.addReadinessCheck(Self.readinessReason(of: store, role: "store"))
        state.addReadinessCheck(Self.readinessReason(of: outbox, role: "webhook outbox"))
    }

    /// Key IDs whose private key is published (the repository's demo key): whoever reaches the provider
    /// endpoint can sign with them.
    static let publishedKeyIDs: Set<String> = ["DEMOKEY123"]

    /// Warns when a key whose private half is public is configured on a server other machines can reach:
    /// anyone there can push (and so auto-register devices, fill the store, feed webhooks).
    static func warnAboutPublicKeys(_ configuration: SandboxConfiguration, logger: Logger) {
        let exposed = configuration.listenersReachableFromOtherMachines.map(\.name)
        guard !exposed.isEmpty else { return }
        for team in configuration.teams {
            for key in team.keys where publishedKeyIDs.contains(key.keyID) {
                logger.warning(
                    "a demo key whose private key is public is configured on listeners other machines can reach: anyone there can push; configure a key of your own (teams[].keys) and remove it",
                    [("key", key.keyID), ("team", team.teamID), ("listeners", exposed.joined(separator: ","))])
            }
        }
    }

    /// The programs exec extensions may run: `extensions.allowedExecutables` (relative to the
    /// configuration file) and the exec extensions of the file's own apps (relative to the working
    /// directory, as they run).
    static func execPolicy(from configuration: SandboxConfiguration) -> ExecPolicy {
        var entries = configuration.extensions.allowedExecutables.map { entry in
            CredentialTools.resolve(entry, against: configuration.baseDirectory)
        }
        for app in configuration.apps {
            guard let json = app.serviceExtension?.serialized,
                let parsed = try? ExtensionConfiguration(json: json), case .exec(let settings) = parsed.kind
            else { continue }
            entries.append(ExecPolicy.entry(allowing: settings))
        }
        return ExecPolicy(allowing: entries)
    }

    static func httpOptions(from configuration: SandboxConfiguration) -> HTTPServerOptions {
        let limits = configuration.limits
        var options = HTTPServerOptions()
        options.http1Limits = HTTP1Limits(
            maxRequestLineBytes: limits.maxRequestLineBytes, maxHeaderCount: limits.maxHeaderCount,
            maxHeaderBytes: limits.maxHeaderBytes, maxBodyBytes: limits.maxBodyBytes)
        options.maxConcurrentStreams = UInt32(clamping: limits.maxConcurrentStreams)
        options.maxHeaderListSize = limits.maxHeaderListSize
        options.maxBodyBytes = limits.maxBodyBytes
        options.idleTimeout = max(0.01, limits.idleTimeoutSeconds).nanoseconds
        options.requestTimeout = max(0.01, limits.requestTimeoutSeconds).nanoseconds
        options.requestLogging = configuration.requestLogging
        options.maxOutputBytesPerConnection = limits.maxOutputBytesPerConnection
        options.maxRequestBodyBytesPerConnection = limits.maxRequestBodyBytesPerConnection
        options.sendTimeout = limits.sendTimeoutSeconds.nanoseconds
        options.streamResetBurst = limits.streamResetBurst
        options.streamResetsPerSecond = limits.streamResetsPerSecond
        options.discardedDataBurstBytes = limits.discardedDataBurstBytes
        options.discardedDataBytesPerSecond = limits.discardedDataBytesPerSecond
        options.streamBufferBytes = limits.eventStreamBufferBytes
        options.maxBlockingRequestsPerConnection = limits.maxAPIRequestsPerConnection
        return options
    }

    /// Binds the listeners and starts serving.
    @discardableResult
    public func start() throws -> [BoundListener] {
        try webhooks.start()
        let bound = try server.start()
        state.setReady(true)
        return bound
    }

    /// The bound listeners (after `start`).
    public var listeners: [BoundListener] { server.listeners }

    /// The port of the first listener with the given TLS-ness.
    public func port(tls: Bool) -> Int? {
        listeners.first { $0.isTLS == tls }?.port
    }

    /// Stops accepting, lets in-flight requests finish (up to the configured grace period),
    /// closes every connection and stops the event loops. Blocks; never call it on a loop.
    public func shutdown() {
        state.setReady(false)
        // Open event streams would hold the graceful drain until its deadline: end them first.
        eventHub.close()
        server.shutdown(gracePeriodNanoseconds: configuration.limits.shutdownGraceSeconds.nanoseconds)
        group.shutdown()
        pipeline.shutdown()
        webhooks.shutdown()
        webhookSender.shutdown()
        retention.stop()
        outbox.close()
        extensions.shutdown()
        // Queued file removals still ask the store; retries after this point are dropped.
        retention.attachments.stop()
        store.close()
        directoryLock.release()
    }

    public var openConnections: Int { server.openConnections }
}

/// The delivery engine takes accepted pushes for the provider endpoint.
extension DeliveryEngine: AcceptedPushReceiver {}

/// Prunes old notification records, events and finished webhook deliveries once a minute
/// (storage.maxRecords/maxAgeDays, events.maxEvents/maxAgeHours, webhooks.deliveryRetentionDays).
final class Retention: Sendable {
    private let task: Mutex<ScheduledTask?> = Mutex(nil)
    private let stopped = Atomic<Bool>(false)
    private let store: SQLiteStore
    private let outbox: SQLiteStore
    private let clock: any SandboxClock
    private let settings: StorageSettings
    private let events: EventSettings
    private let webhooks: WebhookSettings
    private let logger: Logger
    /// Removes the attachment files of pruned records (and, through the API routes, of deleted ones).
    let attachments: AttachmentSweeper

    init(
        store: SQLiteStore, outbox: SQLiteStore, clock: any SandboxClock, settings: StorageSettings, events: EventSettings,
        webhooks: WebhookSettings, attachmentsDirectory: String, logger: Logger
    ) {
        self.attachments = AttachmentSweeper(root: attachmentsDirectory, logger: logger) { apnsID, deviceToken in
            try store.containsNotification(apnsID: apnsID, deviceToken: deviceToken)
        }
        self.store = store
        self.outbox = outbox
        self.clock = clock
        self.settings = settings
        self.events = events
        self.webhooks = webhooks
        self.logger = logger
        schedule()
    }

    private func schedule() {
        guard !stopped.load(ordering: .relaxed) else { return }
        let next = clock.schedule(afterMilliseconds: 60_000) { [self] in
            prune()
            schedule()
        }
        task.withLock { $0 = next }
    }

    /// One pass over the three logs.
    func prune() {
        let now = clock.nowMilliseconds
        do {
            let attachments = self.attachments
            let pruned = try store.prune(
                keepingAtMost: settings.maxRecords, receivedBefore: now - settings.maxAgeDays.milliseconds,
                removed: { attachments.removed($0) })
            let count = pruned.expired + pruned.overflow
            if count > 0 { logger.info("pruned notification records", [("count", "\(count)")]) }
            // Events a webhook subscription has not been fed yet stay, whatever their age.
            let floor = try outbox.subscriptions().map(\.cursor).min() ?? .max
            let events = try store.pruneEvents(
                maxEvents: events.maxEvents, olderThan: now - events.maxAgeHours.milliseconds, keepingAbove: floor)
            if events > 0 { logger.info("pruned events", [("count", "\(events)")]) }
            try outbox.pruneDeliveries(finishedBefore: now - webhooks.deliveryRetentionMilliseconds)
        } catch {
            logger.warning("pruning failed", [("error", "\(error)")])
        }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        task.withLock { $0?.cancel() }
    }
}
