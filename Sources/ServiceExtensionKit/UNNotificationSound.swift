// APNs Sandbox — ServiceExtensionKit: sounds and interruption levels (Apple's UserNotifications shapes).

import Foundation

/// The name of a sound file in the app bundle or `Library/Sounds` (Apple's `UNNotificationSoundName`).
public struct UNNotificationSoundName: Hashable, RawRepresentable, Sendable, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public init(_ rawValue: String) { self.rawValue = rawValue }

    public init(stringLiteral value: String) { self.rawValue = value }
}

/// A sound to play with the notification (Apple's `UNNotificationSound`).
///
/// On the wire it is the `aps.sound` string: `"default"` or a file name. Critical sounds keep their name
/// (or `"default"`); their volume is kept here but not sent, since the sandbox records the sound as a string.
///
/// `@unchecked Sendable`: immutable after initialization (an `NSObject` subclass cannot be checked).
open class UNNotificationSound: NSObject, @unchecked Sendable {
    /// The sound file name; `nil` for the default sound.
    let name: String?
    let isCritical: Bool
    let volume: Float?

    init(name: String?, critical: Bool = false, volume: Float? = nil) {
        self.name = name
        self.isCritical = critical
        self.volume = volume
        super.init()
    }

    /// A sound file from the app bundle or the app group's `Library/Sounds`.
    public convenience init(named name: UNNotificationSoundName) {
        self.init(name: name.rawValue)
    }

    /// The system's default notification sound.
    open class var `default`: UNNotificationSound { UNNotificationSound(name: nil) }

    /// The default sound for critical alerts.
    open class var defaultCritical: UNNotificationSound { UNNotificationSound(name: nil, critical: true) }

    /// The default ringtone (iOS: for communication notifications).
    open class var defaultRingtone: UNNotificationSound { UNNotificationSound(name: nil) }

    /// The default critical-alert sound at a volume from 0 to 1.
    open class func defaultCriticalSound(withAudioVolume volume: Float) -> UNNotificationSound {
        UNNotificationSound(name: nil, critical: true, volume: volume)
    }

    /// A named critical-alert sound.
    open class func criticalSoundNamed(_ name: UNNotificationSoundName) -> UNNotificationSound {
        UNNotificationSound(name: name.rawValue, critical: true)
    }

    /// A named critical-alert sound at a volume from 0 to 1.
    open class func criticalSoundNamed(_ name: UNNotificationSoundName, withAudioVolume volume: Float)
        -> UNNotificationSound
    {
        UNNotificationSound(name: name.rawValue, critical: true, volume: volume)
    }

    /// A named ringtone sound.
    open class func ringtoneSoundNamed(_ name: UNNotificationSoundName) -> UNNotificationSound {
        UNNotificationSound(name: name.rawValue)
    }

    /// The `aps.sound` string this sound stands for.
    var wireValue: String { name ?? "default" }

    /// The sound for an `aps.sound` value: a string, or a critical-sound dictionary (`{"critical":1,"name":…}`).
    static func fromWire(_ value: Any) -> UNNotificationSound? {
        if let string = value as? String {
            return string == "default" ? .default : UNNotificationSound(name: string)
        }
        if let dictionary = value as? [String: Any] {
            let name = (dictionary["name"] as? String).flatMap { $0 == "default" ? nil : $0 }
            let critical = (dictionary["critical"] as? Int ?? 0) != 0
            let volume = (dictionary["volume"] as? Double).map(Float.init)
            return UNNotificationSound(name: name, critical: critical, volume: volume)
        }
        return nil
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? UNNotificationSound else { return false }
        return name == other.name && isCritical == other.isCritical && volume == other.volume
    }

    open override var hash: Int { name.hashValue ^ isCritical.hashValue }

    open override var description: String {
        "<UNNotificationSound: \(wireValue)\(isCritical ? ", critical" : "")>"
    }
}

/// How urgently the system presents a notification (Apple's `UNNotificationInterruptionLevel`).
public enum UNNotificationInterruptionLevel: UInt, Sendable, Hashable {
    /// Added to the list silently, without lighting the screen.
    case passive = 0
    /// Presented immediately, lights the screen, may play a sound (the default).
    case active = 1
    /// Breaks through Focus and scheduled summaries.
    case timeSensitive = 2
    /// Plays a sound even when the device is muted.
    case critical = 3

    /// The `aps.interruption-level` string.
    var wireValue: String {
        switch self {
        case .passive: "passive"
        case .active: "active"
        case .timeSensitive: "time-sensitive"
        case .critical: "critical"
        }
    }

    init?(wireValue: String) {
        switch wireValue {
        case "passive": self = .passive
        case "active": self = .active
        case "time-sensitive", "timeSensitive": self = .timeSensitive
        case "critical": self = .critical
        default: return nil
        }
    }
}
