// APNs Sandbox — wiring: configuration → certificates → routes → listeners, and shutdown.
import APNsProtocol
import Crypto
import Foundation
import HTTP
import Sandbox
import Support
import Transport

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
    /// Every push record, newest first (until the durable store lands).
    public let pushes: RecentPushes
    private let group: EventLoopGroup
    private let server: TCPServer

    public init(configuration: SandboxConfiguration, logger: Logger) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        let dataDirectory = configuration.dataDirectory
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)

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
        registry = DeviceRegistry(unknownTokenPolicy: settings.unknownDeviceTokens == "strict" ? .strict : .autoRegister)
        try Self.seed(registry, from: configuration)
        pushes = RecentPushes(capacity: settings.recentPushCapacity)
        let keys = try ProviderKeyStore(teams: configuration.teams, baseDirectory: configuration.baseDirectory)
        var listenerEnvironments: [String: APNsEnvironment] = [:]
        for listener in configuration.listeners {
            if let name = listener.environment, let environment = APNsEnvironment(rawValue: name) {
                listenerEnvironments[listener.name] = environment
            }
        }
        let provider = ProviderEndpoint(
            keys: keys, registry: registry, sink: pushes, settings: settings, listenerEnvironments: listenerEnvironments)

        var router = Router()
        provider.register(on: &router)  // first: the hot path matches at once
        HealthRoutes.register(on: &router, state: state, caCertificatePEM: Array(caPEM))
        PushLogRoutes.register(on: &router, pushes: pushes)
        CredentialRoutes.register(on: &router, dataDirectory: dataDirectory)

        var options = Self.httpOptions(from: configuration)
        options.oversizedBodyResponder = { request in provider.answerOversized(request) }
        let streamsBeforeAuthentication = UInt32(clamping: max(0, settings.streamsBeforeAuthentication))
        let fullStreams = options.maxConcurrentStreams
        if streamsBeforeAuthentication > 0 {
            // APNs: one stream until a valid provider token; certificate connections start open.
            options.initialMaxConcurrentStreams = { info in
                info.peerCertificate?.isTrusted == true ? fullStreams : min(streamsBeforeAuthentication, fullStreams)
            }
        }
        let pipeline = HTTPPipeline(responder: router, options: options, logger: logger.with("component", "http"))
        group = try EventLoopGroup(count: configuration.eventLoops)
        var serverConfiguration = TCPServer.Configuration(
            listeners: configuration.listeners.map {
                ListenerConfiguration(name: $0.name, host: $0.host, port: $0.port, tls: $0.tls ? tlsContext : nil)
            })
        serverConfiguration.maxConnections = configuration.limits.maxConnections
        serverConfiguration.connectionLimits.handshakeTimeout = UInt64(configuration.limits.requestTimeoutSeconds * 1e9)
        server = TCPServer(
            configuration: serverConfiguration, loops: group.loops, factory: HTTPConnectionFactory(pipeline: pipeline),
            logger: logger.with("component", "transport"))
    }

    /// Adds the configured teams' apps and the configured devices (idempotent).
    static func seed(_ registry: DeviceRegistry, from configuration: SandboxConfiguration) throws {
        for team in configuration.teams {
            for bundleID in team.apps { registry.upsert(App(bundleID: bundleID, teamID: team.teamID)) }
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for device in configuration.devices {
            guard let token = DeviceToken(hex: device.token) else {
                throw ConfigurationError("device \(device.token.prefix(8))…: not a hex device token")
            }
            let environment = APNsEnvironment(rawValue: device.environment) ?? .development
            registry.upsert(Device(
                token: token, environment: environment, locale: device.locale,
                apps: device.apps.map { InstalledApp(bundleID: $0, installedAt: now) }))
        }
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
        options.idleTimeout = UInt64(max(0.01, limits.idleTimeoutSeconds) * 1e9)
        options.requestTimeout = UInt64(max(0.01, limits.requestTimeoutSeconds) * 1e9)
        options.requestLogging = configuration.requestLogging
        return options
    }

    /// Binds the listeners and starts serving.
    @discardableResult
    public func start() throws -> [BoundListener] {
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
        server.shutdown(gracePeriodNanoseconds: UInt64(max(0, configuration.limits.shutdownGraceSeconds) * 1e9))
        group.shutdown()
    }

    public var openConnections: Int { server.openConnections }
}
