// APNs Sandbox — the events a notification's status changes announce, and their JSON bodies.
import APNsProtocol
import Support

/// Builds the event for a notification record that just reached a status (``SandboxEventType/init(status:)``).
///
/// The `data` object (documented in the OpenAPI file as `NotificationEventData`):
/// `apnsId`, `uniqueId`, `deviceToken`, `bundleId`, `topic`, `pushType`, `priority`, `environment`,
/// `collapseId`, `expiration`, `receivedAt`, `status`, `href` (the record in the REST API); `payload`
/// (the original JSON) on `push.accepted`; `outcome`, `displayed` (content with `attachments`) on
/// `notification.displayed`; `reason` (the last timeline detail) on `stored`, `expired`, `discarded`;
/// and `timings` (`at`, `sinceReceivedMs`, `extensionMs`) on every final event; `faults` (the fault rules
/// applied to the push: `ruleId`, `name`, `action`, `detail`) when there are any.
public enum NotificationEvents {
    /// The event for `record`'s current status, or nil when the status announces none.
    public static func draft(for record: NotificationRecord) -> EventDraft? {
        guard let type = SandboxEventType(status: record.status) else { return nil }
        let last = record.timeline.last
        let at = last?.at ?? record.receivedAt
        var writer = JSONWriter(reservingCapacity: 512 + (type == .pushAccepted ? record.payload.utf8.count : 0))
        writer.member("apnsId", record.apnsID)
        writer.member("uniqueId", record.uniqueID)
        writer.member("deviceToken", record.deviceToken)
        writer.member("bundleId", record.bundleID)
        writer.member("topic", record.topic)
        writer.member("pushType", record.pushType)
        writer.member("priority", record.priority)
        writer.member("environment", record.environment.rawValue)
        writer.member("collapseId", record.collapseID)
        writer.member("expiration", record.expiration)
        writer.member("receivedAt", record.receivedAt)
        writer.member("status", record.status.rawValue)
        switch type {
        case .pushAccepted:
            writer.member("payload", jsonText: record.payload)
        case .notificationDisplayed:
            writer.member("outcome", record.outcome?.rawValue)
            if let displayed = record.displayed {
                writer.member("displayed") { writeContent(displayed, apnsID: record.apnsID, deviceToken: record.deviceToken, into: &$0) }
            }
        case .notificationStored, .notificationExpired, .notificationDiscarded:
            writer.member("reason", last?.detail)
        default:
            break
        }
        if record.status.isFinal {
            writer.member("timings") { timings in
                timings.member("at", at)
                timings.member("sinceReceivedMs", max(0, at - record.receivedAt))
                // Not across a restart (an interrupted extension): monotonic times of two runs do not compare.
                let running = record.timeline.lastIndex { $0.step == NotificationStatus.extensionRunning.rawValue }
                if let running, !record.timeline[running...].contains(where: { $0.step == DeliveryRules.resumedStep }),
                    let last
                {
                    let started = record.timeline[running]
                    timings.member("extensionMs", Double(last.monotonic &- started.monotonic) / 1_000_000)
                }
            }
        }
        if !record.faults.isEmpty { writer.member("faults", json: faultsJSON(record.faults)) }
        // As ``href(apnsID:deviceToken:under:)`` makes it, written in place.
        writer.member("href", joining: (hrefPrefix, record.apnsID, hrefDevice, record.deviceToken))
        return EventDraft(
            type: type, time: at, deviceToken: record.deviceToken, topic: record.topic, data: writer.finish())
    }

    /// `{"ruleId", "name", "action", "detail"}` of an applied fault rule.
    public static func faultJSON(_ fault: AppliedFault) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 160)
        writer.member("ruleId", fault.ruleID)
        writer.member("name", fault.name)
        writer.member("action", fault.action)
        writer.member("detail", fault.detail)
        return writer.finish()
    }

    static func faultsJSON(_ faults: [AppliedFault]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, fault) in faults.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += faultJSON(fault)
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// The notification's path in the REST API (`under` it: one of its parts), for this device.
    public static func href(apnsID: String, deviceToken: String, under part: String = "") -> String {
        hrefPrefix + apnsID + part + hrefDevice + deviceToken
    }

    private static let hrefPrefix = "/api/v1/notifications/"
    private static let hrefDevice = "?device="


    /// Where an attachment is served: its identifier (which an extension chooses freely) percent-encoded
    /// as one path segment.
    public static func attachmentHref(apnsID: String, deviceToken: String, identifier: String) -> String {
        href(apnsID: apnsID, deviceToken: deviceToken, under: "/attachments/" + PercentEncoding.segment(identifier))
    }

    /// What the user sees, as in the REST API's `DisplayedContent` (attachments with their download path): the
    /// members, into an object being written.
    static func writeContent(_ content: DisplayedContent, apnsID: String, deviceToken: String, into writer: inout JSONWriter) {
        writer.member("title", content.title)
        writer.member("subtitle", content.subtitle)
        writer.member("body", content.body)
        writer.member("badge", content.badge)
        writer.member("sound", content.sound)
        writer.member("threadId", content.threadID)
        writer.member("category", content.category)
        writer.member("interruptionLevel", content.interruptionLevel)
        writer.member("targetContentId", content.targetContentID)
        writer.member("relevanceScore", content.relevanceScore)
        if let userInfo = content.userInfoJSON { writer.member("userInfo", jsonText: userInfo) }
        writer.member("attachments", jsonArray: content.attachments.map { attachment in
            var item = JSONWriter(reservingCapacity: 160)
            item.member("identifier", attachment.identifier)
            item.member("type", attachment.type)
            item.member("size", attachment.size)
            item.member("href", attachmentHref(apnsID: apnsID, deviceToken: deviceToken, identifier: attachment.identifier))
            return item.finish()
        })
    }
}
