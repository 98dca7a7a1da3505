// APNs Sandbox — wiring: configuration → certificates → routes → services; start and shutdown.
import APNsProtocol
import Crypto
import Dashboard
import Events
import ExtensionRuntime
import Foundation
import HTTP
import Intake
import Sandbox
import Store
import Support
import Transport
import Webhooks

/// The sandbox: stores, delivery, extensions, webhooks, event loops, listeners and routes built from a
/// `SandboxConfiguration`.
///
/// ### Lifecycle
/// `init` validates the configuration, takes the data directory's lock (first: a second server on the
/// directory is refused before it touches anything), makes the certificates, reads the provider keys and
/// the admin token, and builds every other part as a value: no store is open and no thread, armed timer or
/// listening socket exists yet (it holds a few descriptors: the lock's, the extension runtime's wake-up
/// pipe, and the two HTTP clients' curl multi handles). `start()` runs the ``ServiceGroup`` of SandboxServer+Services.swift: it opens the stores, seeds
/// them from the configuration, recovers interrupted deliveries, starts the timers and threads, binds every
/// listener (port 0 picks a free port; `listeners` tells which) and returns. When one of those steps
/// fails, what started before it is stopped again in reverse order (the lock is given up too) and the
/// error comes out of `start()`. `shutdown()` stops everything in reverse order: readiness, event streams,
/// a graceful drain, then the loops and the rest. Used by the CLI and by tests.
public final class SandboxServer: Sendable {
    public let configuration: SandboxConfiguration
    public let logger: Logger
    public let state = ServerState()
    /// The TLS files in use (generated or user-supplied).
    public let tlsFiles: ServerTLSFiles
    /// Apps and devices the provider endpoint resolves pushes against.
    public let registry: DeviceRegistry
    /// Fills `registry` from the store at start (its first batch) and while serving (the rest).
    let registryLoader: RegistryLoader
    /// Every push the endpoint received (accepted or rejected), newest first, in memory.
    public let pushes: RecentPushes
    /// Notifications, devices, apps and the event log (open from `start()` until `shutdown()`): an SQLite file,
    /// or with `storage.mode` `memory` a bounded journal in memory.
    public let store: any SandboxStore
    /// The webhook outbox: subscriptions and deliveries (`webhooks.sqlite` in the data directory, or in memory).
    public let outbox: any OutboxStore
    static let outboxFileName = "webhooks.sqlite"
    /// Delivery to the simulated devices.
    public let engine: DeliveryEngine
    /// Service extension instances.
    public let extensions: ExtensionRuntime
    /// Delivers events to webhook subscriptions.
    public let webhooks: WebhookDispatcher
    let eventHub: EventStreamHub
    /// Fault rules (`/api/v1/faults`, the configuration's `faults`).
    let faults: FaultService
    /// Time and timers of delivery, extensions, webhooks and retention: the system clock, or with `clock.virtual`
    /// a ``VirtualClock`` that `/api/v1/clock` steers.
    let clock: any SandboxClock
    /// Reads and steers ``clock`` for the API (and a reset of the sandbox: ``ClockService/reset()``).
    let clockService: ClockService
    /// The parts that take part in resets and snapshots besides the core (faults, the virtual clock):
    /// `steering.register(part)` (docs/reset-and-snapshots.md).
    public let steering = SteeringParticipants()
    /// Held from the start of `init` until the end of `shutdown()` or of a failed `start()` (or until the
    /// object goes).
    private let directoryLock: DataDirectoryLock
    let retention: Retention
    private let network: NetworkServices
    /// Everything `start()` starts, in order.
    let services: ServiceGroup
    /// `GET /metrics` (docs/metrics.md).
    let metrics = SandboxMetrics()

    /// Builds the server; nothing runs until ``start()``.
    /// - Throws: ``ConfigurationError`` for an invalid configuration, a data directory in use by another
    ///   server, unreadable certificates or provider keys, an unusable admin token; the certificate
    ///   authority's errors. The lock is given up again.
    public init(configuration: SandboxConfiguration, logger: Logger) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        let dataDirectory = configuration.dataDirectory
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        // First, before anything that writes to the directory (certificates, the admin token) or cleans up
        // after an earlier run at start (extension processes, recovery): a second server on this directory
        // would undo the work of the one running.
        let directoryLock = try DataDirectoryLock(directory: dataDirectory)
        self.directoryLock = directoryLock
        var isBuilt = false
        defer { if !isBuilt { directoryLock.release() } }

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
        let stores = try Self.makeStores(configuration, logger: logger)
        let (store, outbox) = (stores.store, stores.outbox)
        self.store = store
        self.outbox = outbox
        let clock = ClockService.makeClock(configuration.clock)
        self.clock = clock
        let faults = try FaultService(configuration: configuration, clock: clock)
        self.faults = faults
        let waiters = NotificationWaiters()
        let eventHub = EventStreamHub(
            log: store, heartbeatSeconds: configuration.events.heartbeatSeconds.amount,
            capacity: EventStreamHub.Capacity(
                maxStreams: configuration.limits.maxEventStreams,
                maxStreamsPerClient: configuration.limits.maxEventStreamsPerClient),
            logger: logger.with("component", "events"))
        self.eventHub = eventHub
        let webhookSender = CurlWebhookSender()
        let webhooks = WebhookDispatcher(
            settings: configuration.webhooks.settings, repository: outbox, eventLog: store, sender: webhookSender,
            clock: clock, logger: logger.with("component", "webhooks"), onAttempt: { [metrics] in metrics.webhookAttempted($0) })
        self.webhooks = webhooks
        // Before anything logs events (recovery, seeding): every committed event reaches both.
        store.observeEvents { events in
            eventHub.publish(events)
            if let last = events.last { webhooks.eventsCommitted(upTo: last.id) }
        }
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
            serviceExtensionRunner: MeasuredExtensionRunner(runner: extensions, metrics: metrics, clock: clock),
            onChange: { [metrics] in waiters.notify($0); metrics.notificationChanged($0) })
        self.engine = engine

        let registry = DeviceRegistry(unknownTokenPolicy: settings.unknownDeviceTokens)
        self.registry = registry
        let devices = DeviceService(
            registry: registry, devices: store, engine: engine, clock: clock, events: recorder,
            logger: logger.with("component", "devices"))
        let registryLoader = RegistryLoader(registry: registry, devices: store, logger: logger.with("component", "devices"))
        self.registryLoader = registryLoader
        let attachments = AttachmentSweeper(
            root: dataDirectory + "/attachments", layout: .attachmentStore, logger: logger
        ) { apnsID, deviceToken in
            try store.containsNotification(apnsID: apnsID, deviceToken: deviceToken)
        }
        // The memory journal's bound drops records as pushes come: their attachment files go with them.
        stores.journal?.observeDrops { attachments.removed($0) }
        let retention = Retention(
            store: store, outbox: outbox, clock: clock, settings: Retention.Settings(configuration),
            attachments: attachments, logger: logger)
        self.retention = retention
        // After a jump of a virtual clock what became old is pruned at once, not an interval later.
        let clockService = ClockService(
            clock: clock, events: recorder, settle: { engine.waitUntilAllSettled() }, onChange: { retention.pruneSoon() })
        self.clockService = clockService
        let pushes = RecentPushes(capacity: settings.recentPushCapacity)
        self.pushes = pushes
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
            receiver: engine, clock: clock, faults: faults.book,
            // A fault's latency is real time, also while the virtual clock stands still.
            realTime: clock as? SystemClock ?? SystemClock(label: "apns-sandbox.fault-latency"), metrics: metrics,
            loader: registryLoader, logger: logger.with("component", "provider"))

        var router = Router(errors: ErrorResponder(logger: logger.with("component", "api")))
        provider.register(on: &router)  // first: the hot path matches at once
        HealthRoutes.register(on: &router, state: state, caCertificatePEM: Array(caPEM))
        PushLogRoutes.register(on: &router, pushes: pushes)
        CredentialRoutes.register(on: &router, dataDirectory: dataDirectory)
        ProviderTokenRoutes(configuration: configuration, clock: clock).register(on: &router)
        ProviderTokenValidationRoutes(authenticator: provider.authenticator, settings: configuration.apns, clock: clock)
            .register(on: &router)
        PushValidationRoutes(registry: registry, settings: configuration.apns, clock: clock, loader: registryLoader)
            .register(on: &router)
        // The API's blocking handlers and the long-polls' first reads share one worker pool (threads start on
        // first use; the HTTP pipeline's stop ends them).
        var options = Self.httpOptions(from: configuration)
        let workers = BlockingWorkPool(threads: options.blockingThreads)
        NotificationRoutes(notifications: store, waiters: waiters, dataDirectory: dataDirectory, work: workers,
                           onDelete: { removed in attachments.removed(removed) }).register(on: &router)
        DeviceRoutes(service: devices).register(on: &router)
        AppRoutes(devices: store, registry: registry, execPolicy: execPolicy).register(on: &router)
        EventRoutes(hub: eventHub).register(on: &router)
        WebhookRoutes(repository: outbox, dispatcher: webhooks).register(on: &router)
        FaultRoutes(service: faults).register(on: &router)
        steering.register(faults)
        steering.register(clockService)
        ClockRoutes(service: clockService).register(on: &router)
        let resets = ResetService(.init(
            configuration: configuration, store: store, outbox: outbox, webhooks: webhooks, registry: registry, engine: engine,
            pushes: pushes, rateLimiter: provider.rateLimiter, attachments: attachments, participants: steering, keys: keys,
            clock: clock, logger: logger.with("component", "reset")))
        ResetRoutes(service: resets).register(on: &router)
        SnapshotRoutes(service: resets, execPolicy: execPolicy).register(on: &router)
        OpenAPIDocument.register(on: &router)
        MetricsRoutes.register(on: &router, registry: metrics.registry)
        Self.registerScrapedMetrics(metrics, ScrapeSources(stores: stores, eventHub: eventHub, extensions: extensions))
        if configuration.dashboard.enabled {
            let assets: DashboardAssets = configuration.dashboard.assetsDirectory.map {
                .directory(CredentialTools.resolve($0, against: configuration.baseDirectory))
            } ?? .embedded
            DashboardRoutes(assets: assets).register(on: &router)
        }

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
            responder: AdminGuard(policy: access, next: router), options: options, logger: logger.with("component", "http"),
            blockingPool: workers)
        var serverConfiguration = TCPServer.Configuration(
            listeners: configuration.listeners.map {
                ListenerConfiguration(name: $0.name, host: $0.host, port: $0.port, tls: $0.tls ? tlsContext : nil)
            })
        serverConfiguration.maxConnections = configuration.limits.maxConnections
        serverConfiguration.maxConnectionsPerClient = configuration.limits.maxConnectionsPerClient
        serverConfiguration.connectionLimits.handshakeTimeout = configuration.limits.requestTimeoutSeconds.nanoseconds
        serverConfiguration.connectionLimits.writeStallTimeout = options.sendTimeout
        // A closing connection drops at most one more request body of the peer (an upload going on after its 413).
        serverConfiguration.connectionLimits.lingerMaxBytes = configuration.limits.maxBodyBytes
        let network = NetworkServices(
            configuration: serverConfiguration, loopCount: configuration.eventLoops,
            factory: HTTPConnectionFactory(pipeline: pipeline),
            gracePeriodNanoseconds: configuration.limits.shutdownGraceSeconds.nanoseconds,
            logger: logger.with("component", "transport"))
        self.network = network
        for check in Self.readinessReasons(of: stores) { state.addReadinessCheck(check) }

        services = Self.services(
            Parts(
                configuration: configuration, logger: logger, clock: clock, state: state, directoryLock: directoryLock,
                stores: stores,
                attachments: attachments, extensions: extensions, registry: registry, devices: devices,
                registryLoader: registryLoader, engine: engine, eventHub: eventHub, retention: retention, webhookSender: webhookSender,
                webhooks: webhooks, pipeline: pipeline, network: network))
        isBuilt = true
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

    /// Starts every service in order (SandboxServer+Services.swift): opens the stores, seeds them, recovers,
    /// starts the timers and threads, and binds the listeners; returns once they listen.
    /// - Returns: The bound listeners.
    /// - Throws: The error of the step that failed, after everything started before it was stopped again
    ///   and the data directory's lock was given up: no thread, timer or socket of this server is left.
    ///   A server starts once.
    @discardableResult
    public func start() throws -> [BoundListener] {
        try services.start()
        return listeners
    }

    /// The bound listeners (after `start`).
    public var listeners: [BoundListener] { network.boundListeners }

    /// The port of the first listener with the given TLS-ness.
    public func port(tls: Bool) -> Int? {
        listeners.first { $0.isTLS == tls }?.port
    }

    /// Stops accepting, lets in-flight requests finish (up to the configured grace period),
    /// closes every connection and stops the event loops, then everything else, in the reverse order of
    /// the start. Blocks; never call it on a loop. Idempotent; a server never started gives up its lock.
    public func shutdown() {
        services.stop()
        directoryLock.release()
    }

    public var openConnections: Int { network.openConnections }
}

/// The delivery engine takes accepted pushes for the provider endpoint.
extension DeliveryEngine: AcceptedPushReceiver {}
