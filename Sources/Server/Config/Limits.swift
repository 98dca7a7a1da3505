// APNs Sandbox — the configuration's `limits`: a bound for everything a peer can make the server hold.
import Foundation

extension SandboxConfiguration {
    /// Bounds on connections and requests: everything a peer can make the server hold has one here
    /// (see config/README.md, `limits`).
    public struct Limits: Codable, Sendable, Equatable, StrictlyKeyed {
        public var maxConnections = 10_000
        /// Open connections from one IP address.
        public var maxConnectionsPerClient = 1000
        public var maxConcurrentStreams = 1000
        public var maxHeaderListSize = 8000
        public var maxRequestLineBytes = 8192
        public var maxHeaderCount = 100
        public var maxHeaderBytes = 16_384
        public var maxBodyBytes = 1_048_576
        public var idleTimeoutSeconds: ConfigDuration<InSeconds> = 300
        public var requestTimeoutSeconds: ConfigDuration<InSeconds> = 10
        public var shutdownGraceSeconds: ConfigDuration<InSeconds> = 10
        /// Response bytes a connection may hold for a peer that does not read them.
        public var maxOutputBytesPerConnection = 4_194_304
        /// HTTP/2: request-body bytes buffered per connection (its flow-control window).
        public var maxRequestBodyBytesPerConnection = 4_194_304
        /// A response (HTTP/2 stream) or socket that takes nothing for this long is reset or closed.
        public var sendTimeoutSeconds: ConfigDuration<InSeconds> = 30
        /// HTTP/2 rapid reset: RST_STREAMs a peer may send in a burst, and per second after it.
        public var streamResetBurst = 200
        public var streamResetsPerSecond = 33.0
        /// HTTP/2: DATA bytes for streams the server has closed, in a burst and per second after it.
        public var discardedDataBurstBytes = 33_554_432
        public var discardedDataBytesPerSecond = 4_194_304.0
        /// Server-Sent Events streams open at once, overall and from one IP address.
        public var maxEventStreams = 1000
        public var maxEventStreamsPerClient = 100
        /// Bytes one event stream may have waiting for a slow client before it is ended.
        public var eventStreamBufferBytes = 262_144
        /// REST API requests (which read or write the store, off the event loops) one connection may
        /// have running at once.
        public var maxAPIRequestsPerConnection = 4

        public init() {}

        enum Keys: String, CodingKey, CaseIterable {
            case maxConnections, maxConnectionsPerClient, maxConcurrentStreams, maxHeaderListSize
            case maxRequestLineBytes, maxHeaderCount, maxHeaderBytes, maxBodyBytes, idleTimeoutSeconds
            case requestTimeoutSeconds, shutdownGraceSeconds, maxOutputBytesPerConnection
            case maxRequestBodyBytesPerConnection, sendTimeoutSeconds, streamResetBurst, streamResetsPerSecond
            case discardedDataBurstBytes, discardedDataBytesPerSecond, maxEventStreams, maxEventStreamsPerClient
            case eventStreamBufferBytes, maxAPIRequestsPerConnection
        }

        public init(from decoder: any Decoder) throws {
            let section = try ConfigSection(decoder, defaults: Self())
            maxConnections = try section(.maxConnections, \.maxConnections)
            maxConcurrentStreams = try section(.maxConcurrentStreams, \.maxConcurrentStreams)
            maxHeaderListSize = try section(.maxHeaderListSize, \.maxHeaderListSize)
            maxRequestLineBytes = try section(.maxRequestLineBytes, \.maxRequestLineBytes)
            maxHeaderCount = try section(.maxHeaderCount, \.maxHeaderCount)
            maxHeaderBytes = try section(.maxHeaderBytes, \.maxHeaderBytes)
            maxBodyBytes = try section(.maxBodyBytes, \.maxBodyBytes)
            idleTimeoutSeconds = try section(.idleTimeoutSeconds, \.idleTimeoutSeconds)
            requestTimeoutSeconds = try section(.requestTimeoutSeconds, \.requestTimeoutSeconds)
            shutdownGraceSeconds = try section(.shutdownGraceSeconds, \.shutdownGraceSeconds)
            maxConnectionsPerClient = try section(.maxConnectionsPerClient, \.maxConnectionsPerClient)
            maxOutputBytesPerConnection = try section(.maxOutputBytesPerConnection, \.maxOutputBytesPerConnection)
            maxRequestBodyBytesPerConnection = try section(.maxRequestBodyBytesPerConnection, \.maxRequestBodyBytesPerConnection)
            sendTimeoutSeconds = try section(.sendTimeoutSeconds, \.sendTimeoutSeconds)
            streamResetBurst = try section(.streamResetBurst, \.streamResetBurst)
            streamResetsPerSecond = try section(.streamResetsPerSecond, \.streamResetsPerSecond)
            discardedDataBurstBytes = try section(.discardedDataBurstBytes, \.discardedDataBurstBytes)
            discardedDataBytesPerSecond = try section(.discardedDataBytesPerSecond, \.discardedDataBytesPerSecond)
            maxEventStreams = try section(.maxEventStreams, \.maxEventStreams)
            maxEventStreamsPerClient = try section(.maxEventStreamsPerClient, \.maxEventStreamsPerClient)
            eventStreamBufferBytes = try section(.eventStreamBufferBytes, \.eventStreamBufferBytes)
            maxAPIRequestsPerConnection = try section(.maxAPIRequestsPerConnection, \.maxAPIRequestsPerConnection)
        }

        /// The first invalid value, as a message naming its key (`limits.<key>`); nil when all are valid.
        public func problem() -> String? {
            let positiveIntegers: [(String, Int)] = [
                ("maxConnections", maxConnections), ("maxConnectionsPerClient", maxConnectionsPerClient),
                ("maxConcurrentStreams", maxConcurrentStreams), ("maxHeaderListSize", maxHeaderListSize),
                ("maxRequestLineBytes", maxRequestLineBytes), ("maxHeaderCount", maxHeaderCount),
                ("maxHeaderBytes", maxHeaderBytes), ("maxBodyBytes", maxBodyBytes),
                ("maxOutputBytesPerConnection", maxOutputBytesPerConnection),
                ("maxRequestBodyBytesPerConnection", maxRequestBodyBytesPerConnection),
                ("streamResetBurst", streamResetBurst), ("discardedDataBurstBytes", discardedDataBurstBytes),
                ("maxEventStreams", maxEventStreams), ("maxEventStreamsPerClient", maxEventStreamsPerClient),
                ("eventStreamBufferBytes", eventStreamBufferBytes),
                ("maxAPIRequestsPerConnection", maxAPIRequestsPerConnection),
            ]
            for (key, value) in positiveIntegers where value <= 0 {
                return "limits.\(key) must be a positive integer (got \(value))"
            }
            let positiveNumbers: [(String, Double)] = [
                ("idleTimeoutSeconds", idleTimeoutSeconds.amount), ("requestTimeoutSeconds", requestTimeoutSeconds.amount),
                ("sendTimeoutSeconds", sendTimeoutSeconds.amount), ("streamResetsPerSecond", streamResetsPerSecond),
                ("discardedDataBytesPerSecond", discardedDataBytesPerSecond),
            ]
            for (key, value) in positiveNumbers where !(value > 0 && value.isFinite) {
                return "limits.\(key) must be a positive number (got \(value))"
            }
            if !(shutdownGraceSeconds >= 0 && shutdownGraceSeconds.amount.isFinite) {
                return "limits.shutdownGraceSeconds must not be negative (got \(shutdownGraceSeconds))"
            }
            if eventStreamBufferBytes < 65_536 {
                return "limits.eventStreamBufferBytes must be at least 65536, room for the largest event (got \(eventStreamBufferBytes))"
            }
            if maxConcurrentStreams > Int(UInt32.max) {
                return "limits.maxConcurrentStreams must be at most \(UInt32.max) (got \(maxConcurrentStreams))"
            }
            if maxRequestBodyBytesPerConnection > Int(Int32.max) {
                return "limits.maxRequestBodyBytesPerConnection must be at most \(Int32.max), HTTP/2's largest window "
                    + "(got \(maxRequestBodyBytesPerConnection))"
            }
            if maxRequestBodyBytesPerConnection < maxBodyBytes {
                return "limits.maxRequestBodyBytesPerConnection (\(maxRequestBodyBytesPerConnection)) must be at least "
                    + "limits.maxBodyBytes (\(maxBodyBytes)): a largest body must fit the connection's window"
            }
            return nil
        }
    }
}
