// APNs Sandbox — the intake's first stages: the request line and the headers (Apple's rules, no state).
import APNsProtocol
import Sandbox
import Support

/// Stage 1: the method and `/3/device/<token>` (`MethodNotAllowed`, `BadPath`, `MissingDeviceToken`,
/// `BadDeviceToken`), and a header section over the transport's limits (`PayloadTooLarge`: its fields are
/// incomplete, so no later stage runs).
public struct DeviceTokenStage: Sendable {
    public init() {}

    public func run(_ push: inout IntakePush) -> APNsError? {
        switch PushRequestValidator.deviceToken(method: push.submission.method, path: push.submission.path) {
        case .success(let token):
            push.token = token
            push.record.deviceToken = token.hex
        case .failure(let error):
            return error
        }
        return push.submission.oversize == .headers ? APNsError(.payloadTooLarge) : nil
    }
}

/// Stage 2: the `apns-*` headers (``PushRequestValidator/headers(_:)``); the push's `apns-id` (the client's, or
/// a new time-ordered one); a body over the transport's limit (`PayloadTooLarge`, after the headers).
public struct HeaderStage: Sendable {
    public init() {}

    public func run(_ push: inout IntakePush) -> APNsError? {
        let headers: PushHeaders
        switch PushRequestValidator.headers(push.submission.headers) {
        case .success(let parsed): headers = parsed
        case .failure(let error): return error
        }
        push.headers = headers
        // A generated apns-id is time-ordered: the store's apns-id index then grows at its end (a random id costs
        // a random index page per push, about half the store's writes).
        push.record.apnsID = headers.apnsID ?? UUIDGenerator.makeTimeOrdered(unixMilliseconds: push.now)
        if push.submission.oversize == .body { return APNsError(.payloadTooLarge) }
        push.record.topic = headers.topic
        push.record.pushType = headers.pushType
        push.record.priority = headers.priority
        push.record.expiration = headers.expiration
        push.record.collapseID = headers.collapseID
        return nil
    }
}

/// Stage 5: the payload (``PushRequestValidator/payload(_:pushType:)``: `PayloadEmpty`, `PayloadTooLarge`,
/// `BadPayload`).
public struct PayloadStage: Sendable {
    public init() {}

    public func run(_ push: inout IntakePush) -> APNsError? {
        if case .failure(let error) = PushRequestValidator.payload(push.submission.body, pushType: push.headers?.pushType) {
            return error
        }
        return nil
    }
}
