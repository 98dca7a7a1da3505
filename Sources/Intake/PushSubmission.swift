// APNs Sandbox — a push as the intake receives it from a protocol face: no HTTP type, only what APNs reads.
import APNsProtocol

/// One push request, as the provider endpoint (or another face) hands it to the ``Intake``.
public struct PushSubmission: Sendable {
    /// Which limit of the transport the request went over before its body or headers were read in full.
    public enum Oversize: Sendable, Equatable {
        /// The body is over the transport's limit: `PayloadTooLarge` once the path and headers are checked.
        case body
        /// The header section is over the transport's limits: `PayloadTooLarge` once the path is checked (the header
        /// fields are incomplete, so no header rule runs).
        case headers
    }

    /// The request's method (`POST` is the only one APNs takes).
    public var method: String
    /// The request's path, `/3/device/<token>`.
    public var path: Substring
    /// The header fields as received, lowercase names, in arrival order, duplicates included.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The environment the request addressed (Apple's host name, else the listener's).
    public var environment: APNsEnvironment
    /// The connection it came on, for the push log and fault rules.
    public var connectionID: UInt64
    /// The event loop (thread) that received it; sinks may shard by it.
    public var loopIndex: Int
    public var oversize: Oversize?

    public init(
        method: String, path: Substring, headers: [(name: String, value: String)], body: [UInt8],
        environment: APNsEnvironment, connectionID: UInt64 = 0, loopIndex: Int = 0, oversize: Oversize? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.environment = environment
        self.connectionID = connectionID
        self.loopIndex = loopIndex
        self.oversize = oversize
    }

    /// A push to `deviceToken` as `POST /3/device/<deviceToken>` (a face that names the device directly, such as
    /// the validate route: the request line's rules still apply to the token, e.g. `BadPath` for a `/` in it).
    public init(
        deviceToken: String, headers: [(name: String, value: String)], body: [UInt8], environment: APNsEnvironment
    ) {
        self.init(method: "POST", path: "/3/device/\(deviceToken)"[...], headers: headers, body: body, environment: environment)
    }
}
