// APNs Sandbox — the event loops and the TCP server over them, made when the server starts.
import HTTP
import Support
import Synchronization
import Transport

/// The event loops and the listeners, as two services: ``eventLoops`` makes the loops (each loop's thread
/// starts when the loop is made, so they are made at start, not when the server is built) and stops them;
/// ``listeners`` makes the TCP server over those loops, binds every listener, and drains it at stop.
///
/// Start ``eventLoops`` before ``listeners`` (a ``ServiceGroup`` in that order stops them in reverse).
final class NetworkServices: Sendable {
    private let configuration: TCPServer.Configuration
    private let loopCount: Int
    private let factory: HTTPConnectionFactory
    private let gracePeriodNanoseconds: UInt64
    private let logger: Logger
    private let group = Locked<EventLoopGroup?>(nil)
    private let server = Locked<TCPServer?>(nil)

    /// - Parameters:
    ///   - configuration: The listeners and connection limits.
    ///   - loopCount: Event loops to make (0: one per processor).
    ///   - factory: The protocol handlers of accepted connections.
    ///   - gracePeriodNanoseconds: How long the drain at stop lets requests in flight finish.
    ///   - logger: The TCP server's logger.
    init(
        configuration: TCPServer.Configuration, loopCount: Int, factory: HTTPConnectionFactory,
        gracePeriodNanoseconds: UInt64, logger: Logger
    ) {
        self.configuration = configuration
        self.loopCount = loopCount
        self.factory = factory
        self.gracePeriodNanoseconds = gracePeriodNanoseconds
        self.logger = logger
    }

    /// The bound listeners; empty before ``listeners`` started (or when its start failed).
    var boundListeners: [BoundListener] { server.withLock { $0 }?.listeners ?? [] }

    /// Open connections across the loops; 0 before start.
    var openConnections: Int { server.withLock { $0 }?.openConnections ?? 0 }

    /// Makes the event loops (their threads start) and, at stop, stops them and waits for their threads.
    var eventLoops: ServiceStep {
        ServiceStep(
            "event loops",
            start: { [self] in
                let made = try EventLoopGroup(count: loopCount)
                group.withLock { $0 = made }
            },
            stop: { [self] in group.withLock { $0 }?.shutdown() })
    }

    /// Makes the TCP server over the loops and binds every listener (a failed bind leaves none bound); at
    /// stop, stops accepting and drains (``TCPServer/shutdown(gracePeriodNanoseconds:)``).
    var listeners: ServiceStep {
        ServiceStep(
            "listeners",
            start: { [self] in
                guard let loops = group.withLock({ $0 })?.loops else {
                    throw ServiceGroupError("the listeners start after the event loops")
                }
                let made = TCPServer(configuration: configuration, loops: loops, factory: factory, logger: logger)
                try made.start()
                server.withLock { $0 = made }
            },
            stop: { [self] in server.withLock { $0 }?.shutdown(gracePeriodNanoseconds: gracePeriodNanoseconds) })
    }
}
