// APNs Sandbox — listeners on a group of event loops, connection limits, graceful shutdown.
import Glibc
import Support
import Synchronization

/// One listening address.
public struct ListenerConfiguration: Sendable {
    public var name: String
    public var host: String
    public var port: Int
    /// nil for cleartext.
    public var tls: TLSContext?

    public init(name: String, host: String, port: Int, tls: TLSContext? = nil) {
        self.name = name
        self.host = host
        self.port = port
        self.tls = tls
    }
}

/// A listener that could not bind: which one, where, and why (`Address already in use`, …).
public struct ListenerError: Error, Sendable, CustomStringConvertible {
    public var listener: String
    public var host: String
    public var port: Int
    public var underlying: any Error

    public var description: String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var text = "listener \(listener) cannot listen on \(address): "
        if let system = underlying as? SystemError {
            text += String(cString: strerror(system.errno))
            if system.errno == EADDRINUSE {
                text += " (another process has this port: stop it, or choose another port for this listener)"
            } else if system.errno == EACCES {
                text += " (ports below 1024 need CAP_NET_BIND_SERVICE or a lower sysctl net.ipv4.ip_unprivileged_port_start: choose a port of 1024 or above)"
            } else if system.errno == EADDRNOTAVAIL {
                text += " (this machine has no such address)"
            }
        } else {
            text += "\(underlying)"
        }
        return text
    }
}

/// A listener after binding: its name and the actual port (useful with port 0).
public struct BoundListener: Sendable {
    public var name: String
    public var address: SocketAddress
    public var isTLS: Bool
    public var port: Int { address.port }
}

/// A TCP server: listeners accept on the first loop and hand connections round-robin to every
/// loop of the group; each connection then lives on its loop until it closes.
///
/// Connections beyond `maxConnections`, or beyond `maxConnectionsPerClient` from one address, are closed
/// right after accept (a refusal is logged at most every 10 s, with the count since the last log).
///
/// Safety of `@unchecked Sendable`: mutable state is either atomic (`connectionCount`,
/// `nextLoop`), behind a lock (`listenerStates`, `clients`), or confined to a loop and reached
/// through `LoopBound` values and `loop.execute`.
public final class TCPServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var listeners: [ListenerConfiguration]
        public var maxConnections: Int = 10_000
        /// Open connections from one IP address (IPv4-mapped IPv6 counts as IPv4): one client cannot take
        /// every slot of `maxConnections`.
        public var maxConnectionsPerClient: Int = 1000
        public var connectionLimits = ConnectionLimits()
        /// How often connections get a `connectionTick` (nanoseconds).
        public var tickInterval: UInt64 = 200_000_000
        /// From a connection's close to the trim that gives freed memory back (``MemoryTrimmer``); 0: never.
        public var memoryTrimDelay: UInt64 = MemoryTrimmer.defaultDelayNanoseconds
        /// The least a closing connection must have held (``Connection/peakHeldBytes``) for its close to
        /// schedule a trim: smaller closes (health checks, a connection per push) cost none.
        public var memoryTrimThresholdBytes = MemoryTrimmer.defaultThresholdBytes

        public init(listeners: [ListenerConfiguration]) {
            self.listeners = listeners
        }
    }

    public let configuration: Configuration
    public let loops: [EventLoop]
    private let factory: any ConnectionHandlerFactory
    private let logger: Logger
    private let connectionCount = Atomic<Int>(0)
    /// Open connections per client address (entries at zero are removed).
    private let clients = Locked<[ClientAddress: Int]>([:])
    private let refusals = Locked(RefusalLog())
    private let nextLoop = Atomic<Int>(0)
    private let isDraining = Atomic<Bool>(false)
    private let loopStates: [LoopBound<LoopState>]
    private let boundListeners = Locked<[BoundListener]>([])
    private let acceptors = Locked<[LoopBound<Acceptor>]>([])
    /// Gives back what closed connections held.
    public let memoryTrimmer: MemoryTrimmer

    public init(configuration: Configuration, loops: [EventLoop], factory: any ConnectionHandlerFactory, logger: Logger) {
        precondition(!loops.isEmpty, "a server needs at least one event loop")
        self.configuration = configuration
        self.loops = loops
        self.factory = factory
        self.logger = logger
        self.loopStates = loops.map { LoopBound(LoopState(), loop: $0) }
        self.memoryTrimmer = MemoryTrimmer(
            delayNanoseconds: configuration.memoryTrimDelay, thresholdBytes: configuration.memoryTrimThresholdBytes,
            logger: logger)
    }

    /// The number of open connections across all loops.
    public var openConnections: Int { connectionCount.load(ordering: .relaxed) }

    public var listeners: [BoundListener] { boundListeners.withLock { $0 } }

    /// Binds every listener and starts accepting. Returns the bound addresses.
    @discardableResult
    public func start() throws -> [BoundListener] {
        let acceptLoop = loops[0]
        var bound: [BoundListener] = []
        var made: [LoopBound<Acceptor>] = []
        // Every listener bound first (ports below 1024, 443 in the container image, through the binary's permitted
        // CAP_NET_BIND_SERVICE, given up once they are bound), then each starts accepting.
        var sockets: [(address: SocketAddress, fd: Int32)] = []
        do {
            try BindCapability.whileBinding(ports: configuration.listeners.map(\.port)) {
                for listener in configuration.listeners {
                    do {
                        let address = try SocketAddress(host: listener.host, port: listener.port)
                        sockets.append((address, try Posix.makeListeningSocket(address: address, backlog: 1024, reusePort: false)))
                    } catch {
                        throw ListenerError(listener: listener.name, host: listener.host, port: listener.port, underlying: error)
                    }
                }
            }
        } catch {
            // A failed start leaves nothing listening.
            for socket in sockets { close(socket.fd) }
            throw error
        }
        for (index, (listener, (address, fd))) in zip(configuration.listeners, sockets).enumerated() {
            let local = (try? Posix.localAddress(of: fd)) ?? address
            let acceptor = Acceptor(fd: fd, configuration: listener, server: self)
            let box = LoopBound(acceptor, loop: acceptLoop)
            do {
                try runOnLoop(acceptLoop) { try box.value.start() }
            } catch {
                // A failed start leaves nothing listening: the acceptors started stop (closing their sockets),
                // the sockets not yet handed to one close.
                for acceptor in made { try? runOnLoop(acceptLoop) { acceptor.value.stop() } }
                for socket in sockets[index...] { close(socket.fd) }
                throw ListenerError(listener: listener.name, host: listener.host, port: listener.port, underlying: error)
            }
            made.append(box)
            bound.append(BoundListener(name: listener.name, address: local, isTLS: listener.tls != nil))
            logger.info("listening", [("listener", listener.name), ("address", local.description), ("tls", "\(listener.tls != nil)")])
        }
        acceptors.withLock { $0 = made }
        boundListeners.withLock { $0 = bound }
        for state in loopStates {
            let interval = configuration.tickInterval
            state.loop.execute { state.value.startTicking(loop: state.loop, interval: interval) }
        }
        return bound
    }

    /// Stops accepting, asks every connection to finish (HTTP/2 GOAWAY, HTTP/1.1 close after the
    /// current response), waits up to `gracePeriod` for them to close, then closes the rest.
    /// Blocks the calling thread (never call it on a loop).
    public func shutdown(gracePeriodNanoseconds: UInt64) {
        isDraining.store(true, ordering: .relaxed)
        for acceptor in acceptors.withLock({ $0 }) {
            acceptor.loop.execute { acceptor.value.stop() }
        }
        for state in loopStates {
            state.loop.execute { state.value.beginGracefulShutdown() }
        }
        let deadline = MonotonicClock.nanoseconds() &+ gracePeriodNanoseconds
        while openConnections > 0 && MonotonicClock.nanoseconds() < deadline {
            usleep(10_000)
        }
        let remaining = openConnections
        if remaining > 0 {
            logger.warning("closing connections still open after the grace period", [("count", "\(remaining)")])
            for state in loopStates {
                state.loop.execute { state.value.closeAll() }
            }
            let hardDeadline = MonotonicClock.nanoseconds() &+ 1_000_000_000
            while openConnections > 0 && MonotonicClock.nanoseconds() < hardDeadline { usleep(5_000) }
        }
        for state in loopStates {
            state.loop.execute { state.value.stopTicking(loop: state.loop) }
        }
    }

    // MARK: Internals

    fileprivate func accepted(fd: Int32, remote: SocketAddress, listener: ListenerConfiguration, localPort: Int) {
        if isDraining.load(ordering: .relaxed) {
            Glibc.close(fd)
            return
        }
        let count = connectionCount.wrappingAdd(1, ordering: .relaxed).newValue
        if count > configuration.maxConnections {
            connectionCount.wrappingSubtract(1, ordering: .relaxed)
            Glibc.close(fd)
            logRefusal("connection refused: limit reached", [("max", "\(configuration.maxConnections)")])
            return
        }
        let client = remote.client
        let admitted = clients.withLock { clients -> Bool in
            let open = clients[client, default: 0]
            guard open < configuration.maxConnectionsPerClient else { return false }
            clients[client] = open + 1
            return true
        }
        guard admitted else {
            connectionCount.wrappingSubtract(1, ordering: .relaxed)
            Glibc.close(fd)
            logRefusal(
                "connection refused: per-client limit reached",
                [("client", remote.clientHost), ("max", "\(configuration.maxConnectionsPerClient)")])
            return
        }
        try? Posix.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        let index = nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count
        let state = loopStates[index]
        let limits = configuration.connectionLimits
        let factory = self.factory
        state.loop.execute { [self] in
            do {
                let connection = try Connection(
                    fd: fd, loop: state.loop, remoteAddress: remote, localPort: localPort, listenerName: listener.name,
                    tls: listener.tls, limits: limits,
                    onClose: { [self] closed in
                        state.value.connections[closed.id] = nil
                        self.release(client)
                        self.memoryTrimmer.connectionClosed(heldBytes: closed.peakHeldBytes)
                    })
                connection.handler = factory.makeHandler(for: connection)
                state.value.connections[connection.id] = connection
                try connection.start()
            } catch {
                Glibc.close(fd)
                release(client)
                logger.error("cannot start connection", [("error", "\(error)")])
            }
        }
    }

    /// Gives back a connection's slots (global and per client).
    private func release(_ client: ClientAddress) {
        clients.withLock { clients in
            let open = clients[client, default: 1] - 1
            clients[client] = open > 0 ? open : nil
        }
        connectionCount.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Logs a refused connection, at most once per 10 s (a flood of refusals must not flood the log).
    private func logRefusal(_ message: String, _ metadata: [(String, String)]) {
        let now = MonotonicClock.nanoseconds()
        let suppressed = refusals.withLock { log -> Int? in
            log.count += 1
            guard log.lastLoggedAt == 0 || now &- log.lastLoggedAt >= 10_000_000_000 else { return nil }
            defer {
                log.lastLoggedAt = now
                log.count = 0
            }
            return log.count - 1
        }
        guard let suppressed else { return }
        logger.warning(message, metadata + (suppressed > 0 ? [("refused_since_last_log", "\(suppressed)")] : []))
    }

    private func runOnLoop(_ loop: EventLoop, _ body: @escaping @Sendable () throws -> Void) throws {
        let result = Locked<Result<Void, any Error>?>(nil)
        loop.execute {
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
        }
        while true {
            if let outcome = result.withLock({ $0 }) { return try outcome.get() }
            usleep(200)
        }
    }
}

/// When refusals were last logged and how many came since.
private struct RefusalLog {
    var lastLoggedAt: UInt64 = 0
    var count = 0
}

/// Per-loop connection bookkeeping. Loop-confined.
final class LoopState {
    var connections: [UInt64: Connection] = [:]
    private var tickTimer: TimerHandle?
    private var ticking = false

    func startTicking(loop: EventLoop, interval: UInt64) {
        ticking = true
        scheduleTick(loop: loop, interval: interval)
    }

    private func scheduleTick(loop: EventLoop, interval: UInt64) {
        guard ticking else { return }
        tickTimer = loop.schedule(afterNanoseconds: interval) { [self] in
            let now = MonotonicClock.nanoseconds()
            for connection in Array(connections.values) { connection.tick(now: now) }
            scheduleTick(loop: loop, interval: interval)
        }
    }

    func stopTicking(loop: EventLoop) {
        ticking = false
        if let tickTimer { loop.cancel(tickTimer) }
    }

    func beginGracefulShutdown() {
        for connection in Array(connections.values) { connection.beginGracefulShutdown() }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
    }
}

/// A listening socket registered on the accept loop. Loop-confined.
final class Acceptor: Selectable {
    private var fd: Int32
    private var token: UInt64 = 0
    private let configuration: ListenerConfiguration
    private unowned let server: TCPServer
    private let localPort: Int
    private let loop: EventLoop

    init(fd: Int32, configuration: ListenerConfiguration, server: TCPServer) {
        self.fd = fd
        self.configuration = configuration
        self.server = server
        self.localPort = (try? Posix.localAddress(of: fd).port) ?? configuration.port
        self.loop = server.loops[0]
    }

    func start() throws {
        token = try loop.register(fd: fd, interest: .read, handler: self)
    }

    func stop() {
        guard fd >= 0 else { return }
        loop.deregister(fd: fd, token: token)
        Glibc.close(fd)
        fd = -1
    }

    func handleEvents(readable: Bool, writable: Bool, hangup: Bool, peerShutdown: Bool) {
        guard readable, fd >= 0 else { return }
        for _ in 0..<64 {
            do {
                guard let (client, remote) = try Posix.accept(fd) else { return }
                server.accepted(fd: client, remote: remote, listener: configuration, localPort: localPort)
            } catch let error as SystemError where error.errno == EMFILE || error.errno == ENFILE {
                // Out of descriptors: leave the rest in the backlog; the limit logs elsewhere.
                return
            } catch {
                return
            }
        }
    }
}
