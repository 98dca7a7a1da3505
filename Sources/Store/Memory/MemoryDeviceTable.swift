// APNs Sandbox — the memory store's devices, packed.
import APNsProtocol
import Sandbox

/// Device records by token in the order they were first added (a listing's order), with O(1) lookup, as compact
/// as a million auto-registered devices need: a record with one app not uninstalled, no keys and no configuration
/// fingerprint (every auto-registered device) is 24 bytes of numbers in a ``TokenTable`` (bundle ID and locale
/// interned, the creation time as an offset from the install); any other is kept whole beside them, its place in
/// the order still held by the table.
struct MemoryDeviceTable: Sendable {
    private struct Packed: Sendable {
        var installedAt: Int64
        /// `createdAt - installedAt`.
        var createdAfterInstall: Int32
        var badge: Int32
        var bundleID: UInt32
        var locale: UInt16
        var environment: APNsEnvironment
        var flags: Flags
    }

    private struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        static let isOnline = Flags(rawValue: 1)
        static let isAutoRegistered = Flags(rawValue: 2)
        static let hasBadge = Flags(rawValue: 8)
        /// The record is in `whole`; the packed fields mean nothing.
        static let isWhole = Flags(rawValue: 16)
    }

    private var packed = TokenTable<Packed>()
    /// Keyed as `packed` is (a token's bytes), so the two never disagree on what a key is.
    private var whole = TokenTable<DeviceRecord>()
    private var names = InternTable()

    var count: Int { packed.count }

    subscript(token: String) -> DeviceRecord? {
        packed[token].map { unpack($0, token: token) }
    }

    func contains(_ token: String) -> Bool { packed[token] != nil }

    /// Adds or replaces; a replaced record keeps its place.
    mutating func set(_ record: DeviceRecord, for token: String) {
        if let value = pack(record) {
            packed[token] = value
            if !whole.isEmpty { whole[token] = nil }
        } else {
            packed[token] = Packed(
                installedAt: 0, createdAfterInstall: 0, badge: 0, bundleID: 0, locale: 0,
                environment: record.environment, flags: .isWhole)
            whole[token] = record
        }
    }

    @discardableResult
    mutating func remove(_ token: String) -> DeviceRecord? {
        guard let value = packed.removeValue(forKey: token) else { return nil }
        guard value.flags.contains(.isWhole) else { return unpack(value, token: token) }
        return whole.removeValue(forKey: token)
    }

    /// The records in order, skipping the first `offset`, at most `limit`.
    func page(limit: Int, offset: Int) -> [DeviceRecord] {
        packed.page(limit: limit, offset: offset).map { unpack($0.value, token: $0.key) }
    }

    var all: [DeviceRecord] {
        var records: [DeviceRecord] = []
        records.reserveCapacity(count)
        packed.forEach { token, value in records.append(unpack(value, token: token)) }
        return records
    }

    mutating func removeAll() {
        packed.removeAll()
        whole.removeAll()
    }

    private mutating func pack(_ record: DeviceRecord) -> Packed? {
        guard record.apps.count == 1, let app = record.apps.first, app.uninstalledAt == nil, record.keys.isEmpty,
            record.configuredAs == nil, let badge = Int32(exactly: app.badge ?? 0),
            case let (offset, overflow) = record.createdAt.subtractingReportingOverflow(app.installedAt), !overflow,
            let createdAfterInstall = Int32(exactly: offset),
            let locale = UInt16(exactly: names.number(for: record.locale))
        else { return nil }
        var flags: Flags = []
        if record.isOnline { flags.insert(.isOnline) }
        if record.isAutoRegistered { flags.insert(.isAutoRegistered) }
        if app.badge != nil { flags.insert(.hasBadge) }
        return Packed(
            installedAt: app.installedAt, createdAfterInstall: createdAfterInstall, badge: badge,
            bundleID: names.number(for: app.bundleID), locale: locale, environment: record.environment, flags: flags)
    }

    private func unpack(_ value: Packed, token: String) -> DeviceRecord {
        if value.flags.contains(.isWhole), let record = whole[token] { return record }
        let app = InstalledAppRecord(
            bundleID: names[value.bundleID], installedAt: value.installedAt,
            badge: value.flags.contains(.hasBadge) ? Int(value.badge) : nil)
        return DeviceRecord(
            token: token, environment: value.environment, locale: names[UInt32(value.locale)],
            isOnline: value.flags.contains(.isOnline), apps: [app],
            createdAt: value.installedAt + Int64(value.createdAfterInstall),
            isAutoRegistered: value.flags.contains(.isAutoRegistered))
    }
}
