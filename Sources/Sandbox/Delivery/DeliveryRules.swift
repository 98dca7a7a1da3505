// APNs Sandbox — what the device does with a push: its kind, priority class and storage deadline (§3.4, §3.5).
import APNsProtocol

/// How a device handles a push once it arrives.
enum DeliveryKind: Sendable, Equatable {
    /// Shown to the user (through the service extension when one applies): ends `displayed`.
    case alert
    /// A background update (`content-available` only, or `apns-push-type: background`): handed to the app,
    /// never to the extension, subject to the hourly budget; ends `delivered-silent`.
    case background
    /// Handed to the system or the app without an alert and without the background budget (VoIP, PushKit,
    /// complications, widgets, controls, File Provider, location, MDM, push to talk): ends `delivered-silent`.
    case system(PushType)
}

/// A push's delivery facts, worked out once from its record and payload.
struct PushTraits: Sendable {
    /// The parsed payload; nil when the stored payload no longer parses (then the content is empty).
    var payload: Payload?
    var kind: DeliveryKind
    /// `apns-priority` 5 or 1: delivered after the low-priority batching delay.
    var isLowPriority: Bool
    /// `apns-expiration: 0`: delivered if the device is reachable now, otherwise expired; never stored.
    var expiresAtOnce: Bool
    /// Wall-clock ms after which a stored copy expires: `apns-expiration` or the storage limit from receipt,
    /// whichever comes first. Nil with `expiresAtOnce`.
    var deadline: Int64?
    /// True when ``deadline`` is the storage limit rather than `apns-expiration`.
    var deadlineIsStorageLimit: Bool

    init(record: NotificationRecord, maxStorageMilliseconds: Int64) {
        let pushType = record.pushType.flatMap(PushType.init(rawValue:))
        payload = try? PushRequestValidator.payload(Array(record.payload.utf8), pushType: pushType).get()
        if pushType == .background || payload?.isSilent == true {
            kind = .background
        } else if let pushType, pushType != .alert, pushType != .liveactivity {
            kind = .system(pushType)
        } else {
            kind = .alert
        }
        isLowPriority = record.priority != 10
        expiresAtOnce = record.expiration == 0
        let storageLimit = record.receivedAt.addingReportingOverflow(max(0, maxStorageMilliseconds))
        let limit = storageLimit.overflow ? Int64.max : storageLimit.partialValue
        deadline = limit
        deadlineIsStorageLimit = true
        if let seconds = record.expiration {
            let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            if seconds == 0 {
                deadline = nil
                deadlineIsStorageLimit = false
            } else if overflow ? seconds < 0 : milliseconds < limit {
                deadline = overflow ? Int64.min : milliseconds
                deadlineIsStorageLimit = false
            }
        }
    }

    /// Why the push has expired at `now` (wall ms), or nil while it may still be delivered.
    func expiryReason(at now: Int64) -> String? {
        guard let deadline, deadline <= now else { return nil }
        return deadlineIsStorageLimit ? DeliveryRules.storageLimitReached : DeliveryRules.expirationPassed
    }
}

/// Timeline wording and fixed numbers of the delivery rules.
enum DeliveryRules {
    static let hourMilliseconds: Int64 = 3_600_000

    // Timeline steps that are events, not statuses.
    static let deferredStep = "deferred"
    static let resumedStep = "resumed"
    /// A fault rule holds the push back (``DeliveryFault/deliverLate(milliseconds:)``).
    static let lateStep = "delayed"

    // Timeline details.
    static let deviceOffline = "device offline"
    static let coalesced = "coalesced"
    static let appUninstalled = "app uninstalled"
    static let expirationPassed = "apns-expiration passed"
    static let storageLimitReached = "storage limit reached"
    static let notStoredOffline = "apns-expiration 0: device offline, not stored"
    static let notStoredThrottled = "apns-expiration 0: background budget used, not stored"
    static let restart = "restart"
    static let extensionWatchdog = "no answer from the extension runner"
    static let extensionInterrupted =
        "original-crash: the sandbox restarted while the service extension was running; it is not run again"

    static func lost(by fault: AppliedFault) -> String {
        "lost before the device by \(fault.ruleText) (APNs answered 200)"
    }

    static func late(by fault: AppliedFault, milliseconds: Int64) -> String {
        "delivered \(milliseconds) ms late by \(fault.ruleText)"
    }

    static func throttled(perHour: Int) -> String {
        "throttled: \(perHour) background pushes in the last hour"
    }

    static func batched(priority: Int, delay: Int64) -> String {
        "priority \(priority): batched, delivered within \(delay) ms"
    }

    static func silentDetail(_ kind: DeliveryKind) -> String {
        switch kind {
        case .alert, .background: "background"
        case .system(let type): type.rawValue
        }
    }
}
