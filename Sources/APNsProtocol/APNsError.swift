// APNs Sandbox — an APNs rejection and its exact JSON error body.

/// An APNs rejection: the status comes from the reason, the body is `{"reason":…}`.
///
/// A 410 rejection (``APNsReason/unregistered``, ``APNsReason/expiredToken``) also carries `timestamp`:
/// milliseconds since the epoch at which the token stopped being valid. Apple sends `timestamp` only
/// with 410, so ``jsonBody`` writes it only when ``status`` is 410 and a timestamp is set.
///
/// A rejection may also carry a ``cause``: why, in a short sentence for people (the push log, the debug log,
/// the dashboard). APNs itself says no more than the reason (`InvalidProviderToken` for a bad signature, an
/// unknown key or a malformed `iat` alike), so the cause never goes into ``jsonBody``.
public struct APNsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the request was rejected.
    public var reason: APNsReason
    /// For 410 responses: when the token stopped being valid, in milliseconds since the epoch.
    public var timestamp: Int64?
    /// Why, for people (e.g. `iat is a string that is not a plain integer`); never sent to the client.
    /// Built only when a request is refused, so the accepted path pays nothing for it.
    public var cause: String?

    /// A rejection for `reason`.
    /// - Parameters:
    ///   - reason: The `reason` string to send.
    ///   - timestamp: Milliseconds since the epoch; used only by 410 reasons.
    ///   - cause: Why, in a short sentence for the logs; not part of the answer.
    public init(_ reason: APNsReason, timestamp: Int64? = nil, cause: String? = nil) {
        self.reason = reason
        self.timestamp = timestamp
        self.cause = cause
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

    /// `status reason`, and `: cause` when there is one, for logs.
    public var description: String {
        if let cause { "\(status) \(reason.rawValue): \(cause)" } else { "\(status) \(reason.rawValue)" }
    }
}
