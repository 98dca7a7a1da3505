// APNs Sandbox — stages 6 to 8: the device (registry), the per-device rate limit, the push log's record.
import APNsProtocol
import Sandbox
import Support

/// Stage 6: may the push go to the device? (``DeviceRegistry/resolve(token:environment:bundleID:now:)``: the
/// unknown-token policy, the environment, `DeviceTokenNotForTopic`, `Unregistered`.) A push that is only checked
/// registers nothing (``DeviceRegistry/check(token:environment:bundleID:now:)``).
public struct ResolveStage: Sendable {
    public let registry: any DeviceDirectory

    public init(_ registry: any DeviceDirectory) {
        self.registry = registry
    }

    /// - Parameters:
    ///   - registering: Whether an unknown token is auto-registered (a push that is sent) or only checked.
    ///   - lookUp: Called first while the stored devices load: fills the registry with the device's stored record;
    ///     false (the store cannot be read) answers `InternalServerError`.
    public func run(_ push: inout IntakePush, registering: Bool, lookUp: ((DeviceToken) -> Bool)? = nil) -> APNsError? {
        guard let token = push.token, let bundleID = push.authenticated?.bundleID else {
            return APNsError(.internalServerError)
        }
        if let lookUp, !lookUp(token) { return APNsError(.internalServerError) }
        let environment = push.record.environment
        return registering
            ? registry.resolve(token: token, environment: environment, bundleID: bundleID, now: push.now)
            : registry.check(token: token, environment: environment, bundleID: bundleID, now: push.now)
    }
}

/// Pushes counted per device (``DeviceRateLimiter`` in memory).
public protocol PushRateLimiter: Sendable {
    /// Counts a push to `token` at `nowMilliseconds`; false when it is one too many.
    func allow(_ token: DeviceToken, nowMilliseconds: Int64) -> Bool
    /// Forgets the count of `token` (nil: of every device), as after a reset of the sandbox.
    func forget(_ token: DeviceToken?)
}

/// Stage 7: APNs' `TooManyRequests` for a device pushed too often (`apns.maxPushesPerSecondPerDevice`; none when 0).
public struct RateLimitStage: Sendable {
    public let limiter: (any PushRateLimiter)?

    public init(maxPerSecond: Int) {
        limiter = maxPerSecond > 0 ? DeviceRateLimiter(maxPerSecond: maxPerSecond) : nil
    }

    public init(limiter: (any PushRateLimiter)?) {
        self.limiter = limiter
    }

    public func run(_ push: inout IntakePush) -> APNsError? {
        guard let limiter, let token = push.token else { return nil }
        return limiter.allow(token, nowMilliseconds: push.now) ? nil : APNsError(.tooManyRequests)
    }
}

/// Counts pushes per device token per second (APNs' `TooManyRequests`).
public final class DeviceRateLimiter: PushRateLimiter {
    private struct Window {
        var second: Int64
        var count: Int
    }

    private let windows = Locked<[DeviceToken: Window]>([:])
    public let maxPerSecond: Int

    public init(maxPerSecond: Int) {
        self.maxPerSecond = maxPerSecond
    }

    public func allow(_ token: DeviceToken, nowMilliseconds: Int64) -> Bool {
        let second = nowMilliseconds / 1000
        return windows.withLock { windows in
            if windows.count > 100_000 { windows = windows.filter { $0.value.second == second } }
            var window = windows[token] ?? Window(second: second, count: 0)
            if window.second != second { window = Window(second: second, count: 0) }
            window.count += 1
            windows[token] = window
            return window.count <= maxPerSecond
        }
    }

    /// Forgets the count of `token` (nil: of every device), as after a reset of the sandbox.
    public func forget(_ token: DeviceToken?) {
        windows.withLock { windows in
            if let token { windows[token] = nil } else { windows.removeAll() }
        }
    }
}

/// Stage 8: the push log's record of every push that was sent (accepted, refused or dropped), and the durable
/// notification of an accepted one.
public struct RecordStage: Sendable {
    public let sink: any PushRecordSink

    public init(_ sink: any PushRecordSink) {
        self.sink = sink
    }

    /// A refused push: its record with the reason (and `apns-unique-id` in the development environment).
    public func refused(_ push: inout IntakePush, _ error: APNsError) {
        push.ensureAPNsID()
        push.record.rejection = error
        if push.record.environment == .development { push.record.uniqueID = UUIDGenerator.make() }
        push.record.fault = push.fault?.applied
        sink.record(push.record)
    }

    /// A push a connection fault dropped: its record with the fault, no answer.
    public func dropped(_ push: inout IntakePush) {
        push.record.fault = push.fault?.applied
        sink.record(push.record)
    }

    /// An accepted push: its record, and the notification the destination takes.
    public func accepted(_ push: inout IntakePush) -> NotificationRecord {
        if push.record.environment == .development { push.record.uniqueID = UUIDGenerator.make() }
        push.record.fault = push.fault?.applied
        sink.record(push.record)
        var notification = Self.notification(
            from: push.record, bundleID: push.authenticated?.bundleID ?? "", topic: push.authenticated?.topic ?? "")
        if let applied = push.fault?.applied { notification.faults = [applied] }
        return notification
    }

    /// What the store keeps of an `authorization` header: provider tokens are credentials (valid for an
    /// hour) and are not written to disk; the record keeps the token's team, key and issue time instead.
    public static let redactedAuthorization = "bearer <redacted>"

    /// The durable notification of an accepted push.
    public static func notification(from record: PushRecord, bundleID: String, topic: String) -> NotificationRecord {
        var teamID: String?
        var keyID: String?
        var issuedAt: Int64?
        var authentication = "none"
        switch record.authentication {
        case .token(let key, let team, let iat):
            teamID = team
            keyID = key
            issuedAt = iat
            authentication = "token:\(team)/\(key)"
        case .certificate(let bundle):
            authentication = "certificate:\(bundle)"
        case .none:
            break
        }
        return NotificationRecord(
            apnsID: record.apnsID, uniqueID: record.uniqueID, deviceToken: record.deviceToken, bundleID: bundleID,
            topic: topic, pushType: record.pushType?.rawValue, priority: record.priority, expiration: record.expiration,
            collapseID: record.collapseID, environment: record.environment,
            headers: record.headers.map {
                HeaderField(name: $0.name, value: $0.name == "authorization" ? Self.redactedAuthorization : $0.value)
            },
            payload: String(decoding: record.payload, as: UTF8.self),
            authentication: authentication, teamID: teamID, keyID: keyID, issuedAt: issuedAt,
            connectionID: record.connectionID, receivedAt: record.receivedAt)
    }
}
