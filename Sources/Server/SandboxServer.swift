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
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        // First, before anything that writes to the directory (certificates, the admin token) or cleans up
        // after an earlier run at start (extension processes, recovery): a second server on this directory
        // would undo the work of the one running.
        let directoryLock = try DataDirectoryLock(directory: configuration.dataDirectory)
        self.directoryLock = directoryLock
        var isBuilt = false
        defer { if !isBuilt { directoryLock.release() } }

        // 1. Certificates: the sandbox CA and the server's certificate (or the configured ones).
        let tls = try Self.makeTLS(configuration)
        tlsFiles = tls.files

        // 2. The application: stores, clock, faults, events, webhooks, extensions, delivery, devices, retention.
        let app = try Application(configuration, logger: logger, metrics: metrics)
        store = app.store
        outbox = app.outbox
        clock = app.clock
        faults = app.faults
        clockService = app.clockService
        eventHub = app.eventHub
        webhooks = app.webhooks
        extensions = app.extensions
        engine = app.engine
        registry = app.registry
        registryLoader = app.registryLoader
        retention = app.retention
        pushes = app.pushes
        Self.warnAboutPublicKeys(configuration, logger: logger)
        // The parts besides the stores that take part in resets and snapshots, in this order.
        steering.register(app.faults)
        steering.register(app.clockService)

        // 3. HTTP: the provider endpoint, the routes over the application, the pipeline behind the admin guard.
        let provider = Self.providerEndpoint(app, configuration: configuration, metrics: metrics, logger: logger)
        let resets = ResetService(.init(
            configuration: configuration, store: app.store, outbox: app.outbox, webhooks: app.webhooks,
            registry: app.registry, engine: app.engine, pushes: app.pushes, rateLimiter: provider.rateLimiter,
            attachments: app.attachments, participants: steering, keys: app.keys, clock: app.clock,
            logger: logger.with("component", "reset")))
        let options = Self.providerHTTPOptions(configuration, provider: provider)
        // The API's blocking handlers and the long-polls' first reads share one worker pool (threads start on
        // first use; the HTTP pipeline's stop ends them).
        let workers = BlockingWorkPool(threads: options.blockingThreads)
        let router = Self.router(app, RouteParts(
            configuration: configuration, logger: logger, state: state, provider: provider, workers: workers,
            caPEM: tls.caPEM, metrics: metrics, resets: resets))
        Self.registerScrapedMetrics(metrics, ScrapeSources(stores: app.stores, eventHub: app.eventHub, extensions: app.extensions))
        let access = try AdminAccessPolicy.make(configuration: configuration, logger: logger.with("component", "admin"))
        let pipeline = HTTPPipeline(
            responder: AdminGuard(policy: access, next: router), options: options, logger: logger.with("component", "http"),
            blockingPool: workers)

        // 4. The network: event loops and listeners.
        let network = Self.networkServices(
            configuration, pipeline: pipeline, options: options, tlsContext: tls.context, logger: logger)
        self.network = network
        for check in Self.readinessReasons(of: app.stores) { state.addReadinessCheck(check) }

        // 5. What start() starts, in order (SandboxServer+Services.swift).
        services = Self.services(Parts(
            configuration: configuration, logger: logger, state: state, directoryLock: directoryLock, app: app,
            pipeline: pipeline, network: network))
        isBuilt = true
    }

    /// The TLS files in use, the listeners' TLS context (nil when no listener is TLS) and the CA's PEM.
    /// Clients may present a certificate issued by the sandbox CA (APNs certificate auth).
    static func makeTLS(_ configuration: SandboxConfiguration) throws -> (files: ServerTLSFiles, context: TLSContext?, caPEM: [UInt8]) {
        let generated = try CertificateAuthority.ensureServerCertificate(
            in: configuration.dataDirectory, extraNames: configuration.tls.extraNames)
        var files = generated
        if let certificate = configuration.tls.certificateFile, let key = configuration.tls.privateKeyFile {
            files = ServerTLSFiles(caCertificate: generated.caCertificate, certificateChain: certificate, privateKey: key)
        }
        let context = configuration.listeners.contains { $0.tls }
            ? try TLSContext(
                certificateChainFile: files.certificateChain, privateKeyFile: files.privateKey,
                clientCAFile: generated.caCertificate)
            : nil
        guard let caPEM = FileManager.default.contents(atPath: files.caCertificate) else {
            throw ConfigurationError("cannot read CA certificate \(files.caCertificate)")
        }
        return (files, context, Array(caPEM))
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
