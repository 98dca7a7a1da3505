// APNs Sandbox — where an accepted push goes: the simulated devices, or nowhere (a dry run).
import APNsProtocol
import Sandbox
import Support

/// The end of the ``Intake``: takes a push every stage passed and gives its answer. `Deliver` and `Validate` now;
/// a broadcast to a channel's devices and a relay to real APNs (whose answer is Apple's) are one type each.
public protocol PushDestination: Sendable {
    /// Whether pushes to it are sent: fault rules apply, the rate limit counts, unknown devices are registered and
    /// the push log records them. A dry run's destination does not send.
    var sends: Bool { get }

    /// Takes an accepted push; `answer` is the stages' 200. `completion` gets the answer to give, once.
    func take(_ notification: NotificationRecord, answer: PushAnswer, completion: @escaping @Sendable (PushAnswer) -> Void)
}

/// Takes accepted pushes durably: `completion` runs once the push is committed (the delivery engine).
public protocol AcceptedPushReceiver: Sendable {
    func accept(_ record: NotificationRecord, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
}

/// Sends the push to the simulated devices: answered 200 once its record committed, else 500
/// `InternalServerError` (and the push is dropped).
public struct Deliver: PushDestination {
    public let receiver: any AcceptedPushReceiver
    public let logger: Logger
    public var sends: Bool { true }

    public init(receiver: any AcceptedPushReceiver, logger: Logger) {
        self.receiver = receiver
        self.logger = logger
    }

    public func take(
        _ notification: NotificationRecord, answer: PushAnswer, completion: @escaping @Sendable (PushAnswer) -> Void
    ) {
        receiver.accept(notification) { [logger] result in
            switch result {
            case .success:
                completion(answer)
            case .failure(let error):
                logger.error("push not stored", [("apns.id", notification.apnsID), ("error", "\(error)")])
                var failed = answer
                failed.error = APNsError(.internalServerError)
                failed.fault = nil
                completion(failed)
            }
        }
    }
}

/// A dry run (`POST /api/v1/pushes/validate`): nothing is sent; the answer is the one APNs would give.
public struct Validate: PushDestination {
    public var sends: Bool { false }

    public init() {}

    public func take(
        _ notification: NotificationRecord, answer: PushAnswer, completion: @escaping @Sendable (PushAnswer) -> Void
    ) {
        completion(answer)
    }
}
