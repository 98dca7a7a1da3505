// APNs Sandbox — what APNs answers a push: the status, reason, ids and timestamp, before any protocol shapes it.
import APNsProtocol
import Sandbox

/// The answer to one push, as Apple defines it ("Handling notification responses from APNs"): 200 with its
/// `apns-id` (and `apns-unique-id` in the development environment), or the status and reason of ``error`` (410
/// with its timestamp). A face writes it in its protocol (the provider endpoint: HTTP/2 or HTTP/1.1 headers and
/// `{"reason":…}`).
public struct PushAnswer: Sendable {
    /// nil: 200.
    public var error: APNsError?
    public var apnsID: String
    /// Apple's `apns-unique-id`, in the development environment only.
    public var uniqueID: String?
    /// The fault rule applied to the push, if any: what it changes in the answer (its connection fault, its latency).
    public var fault: FaultEffect?
    /// What the metrics count of the answer.
    public var pushType: PushType?
    public var environment: APNsEnvironment

    /// 200, or the error's status.
    public var status: Int { error?.status ?? 200 }

    /// A connection fault took the push: there is no answer to give (GOAWAY, RST_STREAM or a close instead), and
    /// none is counted.
    public var isDropped: Bool { fault?.action.dropsPush ?? false }

    public init(
        error: APNsError? = nil, apnsID: String, uniqueID: String? = nil, fault: FaultEffect? = nil,
        pushType: PushType? = nil, environment: APNsEnvironment
    ) {
        self.error = error
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.fault = fault
        self.pushType = pushType
        self.environment = environment
    }
}
