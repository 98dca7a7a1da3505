// APNs Sandbox — the HTTP side over the application: the provider endpoint, every route, the pipeline and the
// listeners.
import APNsProtocol
import Dashboard
import Events
import HTTP
import Sandbox
import Support
import Transport

extension SandboxServer {
    /// The provider endpoint (`POST /3/device/…`) over the application's registry, engine, push log and keys.
    static func providerEndpoint(_ app: Application, configuration: SandboxConfiguration, metrics: SandboxMetrics, logger: Logger) -> ProviderEndpoint {
        var listenerEnvironments: [String: APNsEnvironment] = [:]
        for listener in configuration.listeners {
            if let environment = listener.environment {
                listenerEnvironments[listener.name] = environment
            }
        }
        return ProviderEndpoint(
            keys: app.keys, registry: app.registry, sink: RecordingPushSink(recent: app.pushes, events: app.recorder),
            settings: configuration.apns, listenerEnvironments: listenerEnvironments, receiver: app.engine, clock: app.clock,
            faults: app.faults.book,
            // A fault's latency is real time, also while the virtual clock stands still.
            realTime: app.clock as? SystemClock ?? SystemClock(label: "apns-sandbox.fault-latency"), metrics: metrics,
            loader: app.registryLoader, logger: logger.with("component", "provider"))
    }

    /// What the routes are built over besides the application.
    struct RouteParts {
        let configuration: SandboxConfiguration
        let logger: Logger
        let state: ServerState
        let provider: ProviderEndpoint
        /// The API's blocking handlers and the long-polls' first reads.
        let workers: BlockingWorkPool
        let caPEM: [UInt8]
        let metrics: SandboxMetrics
        /// Resets and snapshots: the application's parts and the registered participants.
        let resets: ResetService
    }

    /// Every route: the provider endpoint first (the hot path matches at once), then health, the push log and
    /// credentials, the REST API by resource, the OpenAPI document, `/metrics` and the dashboard.
    static func router(_ app: Application, _ parts: RouteParts) -> Router {
        let configuration = parts.configuration
        let dataDirectory = configuration.dataDirectory
        var router = Router(errors: ErrorResponder(logger: parts.logger.with("component", "api")))
        parts.provider.register(on: &router)
        HealthRoutes.register(on: &router, state: parts.state, caCertificatePEM: parts.caPEM)
        PushLogRoutes.register(on: &router, pushes: app.pushes)
        CredentialRoutes.register(on: &router, dataDirectory: dataDirectory)
        ProviderTokenRoutes(configuration: configuration, clock: app.clock).register(on: &router)
        ProviderTokenValidationRoutes(authenticator: parts.provider.authenticator, settings: configuration.apns, clock: app.clock)
            .register(on: &router)
        PushValidationRoutes(registry: app.registry, settings: configuration.apns, clock: app.clock, loader: app.registryLoader)
            .register(on: &router)
        let attachments = app.attachments
        NotificationRoutes(notifications: app.store, waiters: app.waiters, dataDirectory: dataDirectory, work: parts.workers,
                           onDelete: { removed in attachments.removed(removed) }).register(on: &router)
        DeviceRoutes(service: app.devices).register(on: &router)
        AppRoutes(devices: app.store, registry: app.registry, execPolicy: app.execPolicy).register(on: &router)
        EventRoutes(hub: app.eventHub).register(on: &router)
        WebhookRoutes(repository: app.outbox, dispatcher: app.webhooks).register(on: &router)
        FaultRoutes(service: app.faults).register(on: &router)
        ClockRoutes(service: app.clockService).register(on: &router)
        ResetRoutes(service: parts.resets).register(on: &router)
        SnapshotRoutes(service: parts.resets, execPolicy: app.execPolicy).register(on: &router)
        OpenAPIDocument.register(on: &router)
        MetricsRoutes.register(on: &router, registry: parts.metrics.registry)
        if configuration.dashboard.enabled {
            let assets: DashboardAssets = configuration.dashboard.assetsDirectory.map {
                .directory(CredentialTools.resolve($0, against: configuration.baseDirectory))
            } ?? .embedded
            DashboardRoutes(assets: assets).register(on: &router)
        }
        return router
    }

    /// The HTTP options of `limits`, with the provider endpoint's answers to oversized requests and APNs' one
    /// stream before a valid provider token (`apns.streamsBeforeAuthentication`).
    static func providerHTTPOptions(_ configuration: SandboxConfiguration, provider: ProviderEndpoint) -> HTTPServerOptions {
        var options = httpOptions(from: configuration)
        options.oversizedBodyResponder = { request in provider.answerOversized(request) }
        options.oversizedHeadersResponder = { request in provider.answerOversizedHeaders(request) }
        let streamsBeforeAuthentication = UInt32(clamping: max(0, configuration.apns.streamsBeforeAuthentication))
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
        return options
    }

    /// The event loops and listeners serving `pipeline` (TLS with `tlsContext` where a listener asks for it).
    static func networkServices(
        _ configuration: SandboxConfiguration, pipeline: HTTPPipeline, options: HTTPServerOptions, tlsContext: TLSContext?,
        logger: Logger
    ) -> NetworkServices {
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
        return NetworkServices(
            configuration: serverConfiguration, loopCount: configuration.eventLoops,
            factory: HTTPConnectionFactory(pipeline: pipeline),
            gracePeriodNanoseconds: configuration.limits.shutdownGraceSeconds.nanoseconds,
            logger: logger.with("component", "transport"))
    }
}
