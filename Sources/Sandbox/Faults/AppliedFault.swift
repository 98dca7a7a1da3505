// APNs Sandbox — what a fault rule did to one push: kept in the push's record and its events.

/// A fault rule's application to one push (``FaultBook``): which rule, what it did, and — for an accepted
/// push — what it still does on the device side.
public struct AppliedFault: Sendable, Codable, Equatable {
    /// The rule's id (`flt_…`) and name.
    public var ruleID: String
    public var name: String?
    /// The action's kind as the API names it (`reject`, `goAway`, `lose`, …; `latency` alone).
    public var action: String
    /// What it did, in words: "answered 503 ServiceUnavailable after 120 ms".
    public var detail: String
    /// What delivery does with the accepted push (nil: nothing).
    public var delivery: DeliveryFault?
    /// The push was dropped without an answer (GOAWAY, RST_STREAM, a closed connection): neither accepted nor
    /// rejected.
    public var dropsPush = false

    public init(
        ruleID: String, name: String?, action: String, detail: String, delivery: DeliveryFault? = nil,
        dropsPush: Bool = false
    ) {
        self.dropsPush = dropsPush
        self.ruleID = ruleID
        self.name = name
        self.action = action
        self.detail = detail
        self.delivery = delivery
    }

    /// "rule flt_… (name)", as timeline details quote it.
    public var ruleText: String {
        name.map { "fault rule \(ruleID) (\($0))" } ?? "fault rule \(ruleID)"
    }
}

/// A fault that acts after APNs accepted the push (200).
public enum DeliveryFault: Sendable, Codable, Equatable {
    /// The push never reaches the device: `discarded`, its timeline says why.
    case lose
    /// The push reaches the device this many milliseconds late (on the sandbox clock).
    case deliverLate(milliseconds: Int64)
    /// The service extension "crashes" at once: the original is shown, outcome `original-crash`.
    case extensionCrash
    /// The service extension never calls the content handler: budget, `timeWillExpire`, grace, then the
    /// original is shown, outcome `original-timeout`.
    case extensionTimeout

    /// The name stored in records: `lose`, `deliverLate`, `extensionCrash`, `extensionTimeout`.
    public var name: String {
        switch self {
        case .lose: "lose"
        case .deliverLate: "deliverLate"
        case .extensionCrash: "extensionCrash"
        case .extensionTimeout: "extensionTimeout"
        }
    }

    /// The fault of `name` (with `milliseconds` for `deliverLate`).
    public init?(name: String, milliseconds: Int64) {
        switch name {
        case "lose": self = .lose
        case "deliverLate": self = .deliverLate(milliseconds: milliseconds)
        case "extensionCrash": self = .extensionCrash
        case "extensionTimeout": self = .extensionTimeout
        default: return nil
        }
    }

    public var milliseconds: Int64 {
        if case .deliverLate(let milliseconds) = self { return milliseconds }
        return 0
    }
}

extension NotificationRecord {
    /// The delivery-side fault applied to this push, if any.
    public var deliveryFault: (fault: DeliveryFault, applied: AppliedFault)? {
        for applied in faults {
            if let delivery = applied.delivery { return (delivery, applied) }
        }
        return nil
    }
}
