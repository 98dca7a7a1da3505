// APNs Sandbox — NotificationRecord ⇄ bytes: the hand-written format stored in `notifications.record`.
import APNsProtocol
import Sandbox

/// Encodes and decodes ``Sandbox/NotificationRecord`` in a length-prefixed binary format.
///
/// This runs for every push, so it avoids Foundation's `JSONEncoder` (slow on Linux): encoding is a
/// single pass into one pre-sized array. The first byte is the format version; the fields follow in
/// declaration order (see ``BinaryWriter`` for the primitive encodings). Enums are stored by raw value,
/// so reordering their cases never changes stored data.
///
/// ### Changing the record
/// Add the new field at the end, bump ``currentVersion``, and keep decoding the older versions
/// (a missing field gets its default) — the stored rows are never rewritten.
///
/// Version 2 appends the applied fault rules. A record without faults (nearly every one) is still written as
/// version 1, byte for byte as before.
enum NotificationRecordCodec {
    static let currentVersion: UInt8 = 2

    static func encode(_ record: NotificationRecord) -> [UInt8] {
        var writer = BinaryWriter(capacity: estimatedSize(of: record))
        writer.write(byte: record.faults.isEmpty ? 1 : currentVersion)
        writer.write(record.apnsID)
        writer.write(record.uniqueID)
        writer.write(record.deviceToken)
        writer.write(record.bundleID)
        writer.write(record.topic)
        writer.write(record.pushType)
        writer.write(record.priority)
        writer.write(signed: record.expiration)
        writer.write(record.collapseID)
        writer.write(record.environment.rawValue)
        writer.write(unsigned: UInt64(record.headers.count))
        for header in record.headers {
            // A count of parts, as the format has had it since headers were lists of strings.
            writer.write(unsigned: 2)
            writer.write(header.name)
            writer.write(header.value)
        }
        writer.write(record.payload)
        writer.write(record.authentication)
        writer.write(record.teamID)
        writer.write(record.keyID)
        writer.write(signed: record.issuedAt)
        writer.write(unsigned: record.connectionID)
        writer.write(signed: record.receivedAt)
        writer.write(record.status.rawValue)
        writer.write(record.outcome?.rawValue)
        if let displayed = record.displayed {
            writer.write(byte: 1)
            encode(displayed, into: &writer)
        } else {
            writer.write(byte: 0)
        }
        writer.write(unsigned: UInt64(record.timeline.count))
        for entry in record.timeline {
            writer.write(entry.step)
            writer.write(signed: entry.at)
            writer.write(unsigned: entry.monotonic)
            writer.write(entry.detail)
        }
        if !record.faults.isEmpty {
            writer.write(unsigned: UInt64(record.faults.count))
            for fault in record.faults {
                writer.write(fault.ruleID)
                writer.write(fault.name)
                writer.write(fault.action)
                writer.write(fault.detail)
                writer.write(fault.delivery?.name)
                writer.write(signed: fault.delivery?.milliseconds ?? 0)
            }
        }
        return writer.bytes
    }

    /// - Throws: ``StoreError`` (`corruptRecord`) for truncated or inconsistent bytes and unknown versions.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> NotificationRecord {
        var reader = BinaryReader(bytes)
        let version = try reader.readByte()
        guard version == 1 || version == currentVersion else {
            throw StoreError.corruptRecord("unknown notification record format version \(version)")
        }
        let apnsID = try reader.readString()
        let uniqueID = try reader.readOptionalString()
        let deviceToken = try reader.readString()
        let bundleID = try reader.readString()
        let topic = try reader.readString()
        let pushType = try reader.readOptionalString()
        let priority = try reader.readInt()
        let expiration = try reader.readOptionalSigned()
        let collapseID = try reader.readOptionalString()
        let environment = try decodeEnum(APNsEnvironment.self, reader.readString())
        var headers: [HeaderField] = []
        let headerCount = try reader.readCount()
        headers.reserveCapacity(headerCount)
        for _ in 0..<headerCount {
            // Written as two parts; a stored list of another length keeps its first two (missing ones empty).
            let partCount = try reader.readCount()
            var header = HeaderField(name: "", value: "")
            for index in 0..<partCount {
                let part = try reader.readString()
                if index == 0 { header.name = part } else if index == 1 { header.value = part }
            }
            headers.append(header)
        }
        let payload = try reader.readString()
        let authentication = try reader.readString()
        let teamID = try reader.readOptionalString()
        let keyID = try reader.readOptionalString()
        let issuedAt = try reader.readOptionalSigned()
        let connectionID = try reader.readUnsigned()
        let receivedAt = try reader.readSigned()
        let status = try decodeEnum(NotificationStatus.self, reader.readString())
        let outcome = try reader.readOptionalString().map { try decodeEnum(DisplayOutcome.self, $0) }
        let displayed = try reader.readPresence() ? try decodeDisplayed(&reader) : nil
        var timeline: [TimelineEntry] = []
        let timelineCount = try reader.readCount(minimumElementSize: 4)
        timeline.reserveCapacity(timelineCount)
        for _ in 0..<timelineCount {
            let step = try reader.readString()
            let at = try reader.readSigned()
            let monotonic = try reader.readUnsigned()
            let detail = try reader.readOptionalString()
            timeline.append(TimelineEntry(step: step, at: at, monotonic: monotonic, detail: detail))
        }
        var faults: [AppliedFault] = []
        if version >= 2 {
            let faultCount = try reader.readCount(minimumElementSize: 4)
            for _ in 0..<faultCount {
                let ruleID = try reader.readString()
                let name = try reader.readOptionalString()
                let action = try reader.readString()
                let detail = try reader.readString()
                let deliveryName = try reader.readOptionalString()
                let milliseconds = try reader.readSigned()
                var delivery: DeliveryFault?
                if let deliveryName {
                    guard let known = DeliveryFault(name: deliveryName, milliseconds: milliseconds) else {
                        throw StoreError.corruptRecord("unknown delivery fault \"\(deliveryName)\"")
                    }
                    delivery = known
                }
                faults.append(AppliedFault(ruleID: ruleID, name: name, action: action, detail: detail, delivery: delivery))
            }
        }
        guard reader.isAtEnd else {
            throw StoreError.corruptRecord("\(reader.remaining) unexpected bytes after the record")
        }
        return NotificationRecord(
            apnsID: apnsID, uniqueID: uniqueID, deviceToken: deviceToken, bundleID: bundleID, topic: topic,
            pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID,
            environment: environment, headers: headers, payload: payload, authentication: authentication,
            teamID: teamID, keyID: keyID, issuedAt: issuedAt, connectionID: connectionID, receivedAt: receivedAt,
            status: status, outcome: outcome, displayed: displayed, timeline: timeline, faults: faults)
    }

    // MARK: Displayed content

    private static func encode(_ content: DisplayedContent, into writer: inout BinaryWriter) {
        writer.write(content.title)
        writer.write(content.subtitle)
        writer.write(content.body)
        writer.write(content.badge)
        writer.write(content.sound)
        writer.write(content.threadID)
        writer.write(content.category)
        writer.write(content.interruptionLevel)
        writer.write(content.targetContentID)
        writer.write(content.relevanceScore)
        writer.write(content.userInfoJSON)
        writer.write(unsigned: UInt64(content.attachments.count))
        for attachment in content.attachments {
            writer.write(attachment.identifier)
            writer.write(attachment.type)
            writer.write(attachment.size)
            writer.write(attachment.path)
        }
    }

    private static func decodeDisplayed(_ reader: inout BinaryReader) throws -> DisplayedContent {
        let title = try reader.readOptionalString()
        let subtitle = try reader.readOptionalString()
        let body = try reader.readOptionalString()
        let badge = try reader.readOptionalInt()
        let sound = try reader.readOptionalString()
        let threadID = try reader.readOptionalString()
        let category = try reader.readOptionalString()
        let interruptionLevel = try reader.readOptionalString()
        let targetContentID = try reader.readOptionalString()
        let relevanceScore = try reader.readOptionalDouble()
        let userInfoJSON = try reader.readOptionalString()
        var attachments: [Attachment] = []
        let attachmentCount = try reader.readCount(minimumElementSize: 4)
        attachments.reserveCapacity(attachmentCount)
        for _ in 0..<attachmentCount {
            let identifier = try reader.readString()
            let type = try reader.readString()
            let size = try reader.readInt()
            let path = try reader.readString()
            attachments.append(Attachment(identifier: identifier, type: type, size: size, path: path))
        }
        return DisplayedContent(
            title: title, subtitle: subtitle, body: body, badge: badge, sound: sound, threadID: threadID,
            category: category, interruptionLevel: interruptionLevel, targetContentID: targetContentID,
            relevanceScore: relevanceScore, userInfoJSON: userInfoJSON, attachments: attachments)
    }

    // MARK: Helpers

    private static func decodeEnum<Value: RawRepresentable<String>>(_ type: Value.Type, _ raw: String) throws -> Value {
        guard let value = Value(rawValue: raw) else {
            throw StoreError.corruptRecord("unknown \(Value.self) value \"\(raw)\"")
        }
        return value
    }

    /// An upper-bound guess so the output array is allocated once for typical records.
    private static func estimatedSize(of record: NotificationRecord) -> Int {
        var size = 160 + record.payload.utf8.count + record.apnsID.utf8.count + record.deviceToken.utf8.count
            + record.topic.utf8.count + record.bundleID.utf8.count + record.authentication.utf8.count
        for header in record.headers {
            size += 4 + header.name.utf8.count + header.value.utf8.count
        }
        size += record.timeline.count * 40
        if let displayed = record.displayed {
            size += 128 + (displayed.title?.utf8.count ?? 0) + (displayed.body?.utf8.count ?? 0)
                + (displayed.userInfoJSON?.utf8.count ?? 0) + displayed.attachments.count * 96
        }
        return size
    }
}
