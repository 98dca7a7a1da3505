// APNs Sandbox — the events that do not come from a notification's status: rejected pushes, device changes.
import APNsProtocol
import Sandbox
import Support

/// Logs `push.rejected` and `device.updated` events (notification events are written by the delivery
/// engine together with their record). These are appended without waiting: a rejected push is answered
/// at once, and an event lost to a crash in that moment is not worth delaying every 4xx for.
public struct EventRecorder: Sendable {
    public let log: any EventLogRepository
    public let logger: Logger

    public init(log: any EventLogRepository, logger: Logger) {
        self.log = log
        self.logger = logger
    }

    public func append(_ draft: EventDraft) {
        log.appendEvents([draft]) { [logger] result in
            if case .failure(let error) = result {
                logger.warning("logging an event failed", [("type", draft.type.rawValue), ("error", "\(error)")])
            }
        }
    }

    /// `data`: `apnsId`, `deviceToken`, `topic`, `pushType`, `priority`, `environment`, `status` (HTTP),
    /// `reason`, `cause` (why a token or certificate was refused, when known), `timestamp` (410 only), `connectionId`, `receivedAt`, `fault` (the fault rule that answered).
    public static func rejected(_ push: PushRecord) -> EventDraft? {
        guard let rejection = push.rejection else { return nil }
        var writer = JSONWriter()
        writer.member("apnsId", push.apnsID)
        writer.member("deviceToken", push.deviceToken.isEmpty ? nil : push.deviceToken)
        writer.member("topic", push.topic)
        writer.member("pushType", push.pushType?.rawValue)
        writer.member("priority", push.priority)
        writer.member("environment", push.environment.rawValue)
        writer.member("status", rejection.status)
        writer.member("reason", rejection.reason.rawValue)
        writer.member("cause", rejection.cause)
        writer.member("timestamp", rejection.timestamp)
        writer.member("connectionId", Int64(truncatingIfNeeded: push.connectionID))
        writer.member("receivedAt", push.receivedAt)
        if let fault = push.fault { writer.member("fault", json: NotificationEvents.faultJSON(fault)) }
        return EventDraft(
            type: .pushRejected, time: push.receivedAt, deviceToken: push.deviceToken.isEmpty ? nil : push.deviceToken,
            topic: push.topic, data: writer.finish())
    }

    /// `fault.applied`: `ruleId`, `name`, `action`, `detail`, and the push's `apnsId`, `deviceToken`, `topic`,
    /// `pushType`, `environment`, `connectionId`, `receivedAt`, `outcome` (`rejected`, `accepted` or `dropped`:
    /// no answer, nothing stored).
    public static func faultApplied(_ push: PushRecord) -> EventDraft? {
        guard let fault = push.fault else { return nil }
        var writer = JSONWriter()
        writer.member("ruleId", fault.ruleID)
        writer.member("name", fault.name)
        writer.member("action", fault.action)
        writer.member("detail", fault.detail)
        writer.member("apnsId", push.apnsID)
        writer.member("deviceToken", push.deviceToken)
        writer.member("topic", push.topic)
        writer.member("pushType", push.pushType?.rawValue)
        writer.member("environment", push.environment.rawValue)
        writer.member("connectionId", Int64(truncatingIfNeeded: push.connectionID))
        writer.member("receivedAt", push.receivedAt)
        writer.member("outcome", push.rejection != nil ? "rejected" : fault.dropsPush ? "dropped" : "accepted")
        return EventDraft(
            type: .faultApplied, time: push.receivedAt, deviceToken: push.deviceToken, topic: push.topic,
            data: writer.finish())
    }

    /// `data`: `change` (`created`, `auto-registered`, `updated`, `deleted`), `token`, and for all but
    /// `deleted`: `environment`, `locale`, `online`, `apps` (`bundleId`, `installedAt`, `uninstalledAt`,
    /// `badge`), `autoRegistered`.
    public static func deviceUpdated(_ change: String, token: String, device: DeviceRecord?, at time: Int64) -> EventDraft {
        var writer = JSONWriter()
        writer.member("change", change)
        writer.member("token", token)
        if let device {
            writer.member("environment", device.environment.rawValue)
            writer.member("locale", device.locale)
            writer.member("online", device.isOnline)
            writer.member("apps", jsonArray: device.apps.map { app in
                var item = JSONWriter(reservingCapacity: 96)
                item.member("bundleId", app.bundleID)
                item.member("installedAt", app.installedAt)
                item.member("uninstalledAt", app.uninstalledAt)
                item.member("badge", app.badge)
                return item.finish()
            })
            writer.member("autoRegistered", device.isAutoRegistered)
        }
        return EventDraft(type: .deviceUpdated, time: time, deviceToken: token, data: writer.finish())
    }
}

/// The provider endpoint's sink: the in-memory push log, plus a `push.rejected` event per rejection and a
/// `fault.applied` event per push a fault rule acted on.
public struct RecordingPushSink: PushRecordSink {
    public let recent: RecentPushes
    public let events: EventRecorder

    public init(recent: RecentPushes, events: EventRecorder) {
        self.recent = recent
        self.events = events
    }

    public func record(_ push: PushRecord) {
        recent.record(push)
        if let draft = EventRecorder.rejected(push) { events.append(draft) }
        if let draft = EventRecorder.faultApplied(push) { events.append(draft) }
    }
}
