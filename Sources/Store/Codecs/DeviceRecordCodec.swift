// APNs Sandbox — DeviceRecord ⇄ bytes: the binary format stored in `devices.record` (JSON before it).
import APNsProtocol
import Sandbox

/// Encodes and decodes ``Sandbox/DeviceRecord`` in ``BinaryWriter``'s format.
///
/// Every auto-registered device is encoded on its first push's path, and every stored device is decoded after a
/// start (into the registry, in batches while serving): Foundation's JSON coders took about 50 µs a device there, a minute for a million
/// devices. Rows written before this format hold sorted-key JSON, whose first byte is `{`; they are still read
/// (``decode(_:)``) and are rewritten in this format by their next change.
///
/// The first byte is the format version (1); the fields follow in declaration order, the keys sorted by name
/// (equal records store equal bytes). Enums are stored by raw value.
enum DeviceRecordCodec {
    static let currentVersion: UInt8 = 1
    private static let jsonOpeningBrace = UInt8(ascii: "{")

    static func encode(_ record: DeviceRecord) -> [UInt8] {
        var writer = BinaryWriter(capacity: 64 + record.token.utf8.count + record.apps.count * 48)
        writer.write(byte: currentVersion)
        writer.write(record.token)
        writer.write(record.environment.rawValue)
        writer.write(record.locale)
        writer.write(record.isOnline)
        writer.write(unsigned: UInt64(record.apps.count))
        for app in record.apps {
            writer.write(app.bundleID)
            writer.write(signed: app.installedAt)
            writer.write(signed: app.uninstalledAt)
            writer.write(app.badge)
        }
        writer.write(unsigned: UInt64(record.keys.count))
        for (name, value) in record.keys.sorted(by: { $0.key < $1.key }) {
            writer.write(name)
            writer.write(value)
        }
        writer.write(signed: record.createdAt)
        writer.write(record.isAutoRegistered)
        writer.write(record.configuredAs)
        return writer.bytes
    }

    /// - Throws: ``StoreError`` (`corruptRecord`) for truncated or inconsistent bytes, unknown versions and
    ///   JSON that is no device.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> DeviceRecord {
        guard let first = bytes.first else { throw StoreError.corruptRecord("empty device record") }
        if first == jsonOpeningBrace { return try SQLiteStore.decodeJSON(DeviceRecord.self, Array(bytes)) }
        var reader = BinaryReader(bytes)
        let version = try reader.readByte()
        guard version == currentVersion else { throw StoreError.corruptRecord("unknown device record version \(version)") }
        let token = try reader.readString()
        let environmentName = try reader.readString()
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw StoreError.corruptRecord("unknown environment \"\(environmentName)\"")
        }
        let locale = try reader.readString()
        let isOnline = try reader.readBool()
        let appCount = try reader.readCount(minimumElementSize: 4)
        var apps: [InstalledAppRecord] = []
        apps.reserveCapacity(appCount)
        for _ in 0..<appCount {
            let bundleID = try reader.readString()
            let installedAt = try reader.readSigned()
            let uninstalledAt = try reader.readOptionalSigned()
            let badge = try reader.readOptionalInt()
            apps.append(InstalledAppRecord(bundleID: bundleID, installedAt: installedAt, uninstalledAt: uninstalledAt,
                                           badge: badge))
        }
        let keyCount = try reader.readCount(minimumElementSize: 2)
        var keys: [String: String] = [:]
        keys.reserveCapacity(keyCount)
        for _ in 0..<keyCount {
            let name = try reader.readString()
            keys[name] = try reader.readString()
        }
        let createdAt = try reader.readSigned()
        let isAutoRegistered = try reader.readBool()
        let configuredAs = try reader.readOptionalString()
        guard reader.isAtEnd else { throw StoreError.corruptRecord("\(reader.remaining) bytes after the device record") }
        return DeviceRecord(
            token: token, environment: environment, locale: locale, isOnline: isOnline, apps: apps, keys: keys,
            createdAt: createdAt, isAutoRegistered: isAutoRegistered, configuredAs: configuredAs)
    }

    static func decode(_ bytes: [UInt8]) throws -> DeviceRecord {
        try bytes.withUnsafeBytes { try decode($0) }
    }
}
