// APNs Sandbox — wiring: configuration → certificates → routes → listeners, and shutdown.
import Crypto
import Foundation
import HTTP
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
        let tlsContext = needsTLS
            ? try TLSContext(certificateChainFile: tlsFiles.certificateChain, privateKeyFile: tlsFiles.privateKey)
            : nil
        guard let caPEM = FileManager.default.contents(atPath: tlsFiles.caCertificate) else {
            throw ConfigurationError("cannot read CA certificate \(tlsFiles.caCertificate)")
        }

        var router = Router()
        HealthRoutes.register(on: &router, state: state, caCertificatePEM: Array(caPEM))
        ProviderRoutes.register(on: &router)

        let options = Self.httpOptions(from: configuration)
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
