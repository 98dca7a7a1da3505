// APNs Sandbox — the registry's devices of one shard, packed.
import APNsProtocol

/// Devices by token, as compact as a million auto-registered devices need: a device with exactly one app (every
/// auto-registered device, most configured ones), not uninstalled, is 16 bytes of numbers in a ``TokenTable`` (its
/// bundle ID and locale interned); any other is kept whole beside them. Not thread-safe: ``DeviceRegistry``'s shard
/// locks.
struct DeviceTable {
    /// A device with one app.
    private struct Packed {
        var installedAt: Int64
        var bundleID: UInt32
        var locale: UInt16
        var environment: APNsEnvironment
        var isAutoRegistered: Bool
    }

    /// What the table says of a push to a token.
    enum Admission {
        case unknownToken
        case admitted
        case refused(APNsError)
    }

    private var packed = TokenTable<Packed>()
    /// Devices with no app, several, or one uninstalled.
    private var others: [DeviceToken: Device] = [:]
    private var names = InternTable()

    var count: Int { packed.count + others.count }

    subscript(token: DeviceToken) -> Device? {
        get {
            if let device = packed[token.hex] { return Self.unpack(device, token: token, names: names) }
            return others.isEmpty ? nil : others[token]
        }
        set {
            guard let device = newValue else {
                packed[token.hex] = nil
                if !others.isEmpty { others[token] = nil }
                return
            }
            if let packedDevice = pack(device) {
                packed[token.hex] = packedDevice
                if !others.isEmpty { others[token] = nil }
            } else {
                packed[token.hex] = nil
                others[token] = device
            }
        }
    }

    func contains(_ token: DeviceToken) -> Bool {
        packed[token.hex] != nil || (!others.isEmpty && others[token] != nil)
    }

    mutating func reserveCapacity(_ capacity: Int) {
        packed.reserveCapacity(capacity)
    }

    /// Removes the devices `selected` picks.
    mutating func removeAll(where selected: (Device) -> Bool) {
        let names = self.names
        packed.removeAll { hex, device in
            guard let token = DeviceToken(hex: hex) else { return true }
            return selected(Self.unpack(device, token: token, names: names))
        }
        others = others.filter { !selected($0.value) }
    }

    /// Marks `bundleID` uninstalled at `time`; false when the device or the app is unknown.
    mutating func uninstall(bundleID: String, from token: DeviceToken, at time: Int64) -> Bool {
        guard var device = self[token], var installed = device.apps[bundleID] else { return false }
        installed.uninstalledAt = time
        device.apps[bundleID] = installed
        self[token] = device
        return true
    }

    /// The rules for a known device (environment, app installed, not uninstalled), read in place.
    func admit(_ token: DeviceToken, environment: APNsEnvironment, bundleID: String, now: Int64) -> Admission {
        if let device = packed[token.hex] {
            guard device.environment == environment else { return .refused(APNsError(.badDeviceToken)) }
            guard names[device.bundleID] == bundleID else { return .refused(APNsError(.deviceTokenNotForTopic)) }
            return .admitted
        }
        guard !others.isEmpty, let device = others[token] else { return .unknownToken }
        guard device.environment == environment else { return .refused(APNsError(.badDeviceToken)) }
        guard let installed = device.apps[bundleID] else { return .refused(APNsError(.deviceTokenNotForTopic)) }
        return Self.admission(uninstalledAt: installed.uninstalledAt, now: now)
    }

    private static func admission(uninstalledAt: Int64?, now: Int64) -> Admission {
        guard let uninstalledAt, uninstalledAt <= now else { return .admitted }
        return .refused(APNsError(.unregistered, timestamp: uninstalledAt))
    }

    private mutating func pack(_ device: Device) -> Packed? {
        guard device.apps.count == 1, let app = device.apps.values.first, app.uninstalledAt == nil,
            let locale = UInt16(exactly: names.number(for: device.locale))
        else { return nil }
        return Packed(
            installedAt: app.installedAt, bundleID: names.number(for: app.bundleID), locale: locale,
            environment: device.environment, isAutoRegistered: device.isAutoRegistered)
    }

    private static func unpack(_ device: Packed, token: DeviceToken, names: InternTable) -> Device {
        let app = InstalledApp(bundleID: names[device.bundleID], installedAt: device.installedAt)
        return Device(
            token: token, environment: device.environment, locale: names[UInt32(device.locale)], apps: [app],
            isAutoRegistered: device.isAutoRegistered)
    }
}
