// APNs Sandbox — an APNs rejection and its exact JSON error body.

/// An APNs rejection: the status comes from the reason, the body is `{"reason":…}`.
///
/// A 410 rejection (``APNsReason/unregistered``, ``APNsReason/expiredToken``) also carries `timestamp`:
/// milliseconds since the epoch at which the token stopped being valid. Apple sends `timestamp` only
/// with 410, so ``jsonBody`` writes it only when ``status`` is 410 and a timestamp is set.
public struct APNsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the request was rejected.
    public var reason: APNsReason
    /// For 410 responses: when the token stopped being valid, in milliseconds since the epoch.
    public var timestamp: Int64?

    /// A rejection for `reason`.
    /// - Parameters:
    ///   - reason: The `reason` string to send.
    ///   - timestamp: Milliseconds since the epoch; used only by 410 reasons.
    public init(_ reason: APNsReason, timestamp: Int64? = nil) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// The HTTP status of the response.
    public var status: Int { reason.status }

    /// The response body, byte for byte: `{"reason":"X"}` or, for 410, `{"reason":"X","timestamp":123}`.
    ///
    /// Reason strings are plain ASCII letters, so no JSON escaping is needed.
    public var jsonBody: [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(64)
        body.append(contentsOf: #"{"reason":""#.utf8)
        body.append(contentsOf: reason.rawValue.utf8)
        body.append(UInt8(ascii: "\""))
        if status == 410, let timestamp {
            body.append(contentsOf: #","timestamp":"#.utf8)
            body.append(contentsOf: String(timestamp).utf8)
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// `status reason`, for logs.
    public var description: String { "\(status) \(reason.rawValue)" }
}
