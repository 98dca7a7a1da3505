// APNs Sandbox — durations in the configuration: the key names the unit, the type does the arithmetic.

/// A length of time as the configuration file gives it: a number in the unit its key names
/// (`idleTimeoutSeconds: 1.5`, `lowPriorityDelayMilliseconds: 250`, `maxAgeDays: 30`). It decodes from
/// and encodes to that number unchanged; use sites take ``nanoseconds``, ``milliseconds`` or
/// ``duration`` and never multiply by hand. Conversions truncate toward zero (as the sandbox always
/// did) and saturate instead of trapping on absurd values. A literal is in the unit:
/// `limits.idleTimeoutSeconds = 1`.
public struct ConfigDuration<Unit: ConfigDurationUnit>: Sendable, Hashable, Comparable, Codable {
    /// The number as written, in `Unit`.
    public var amount: Unit.Amount

    public init(_ amount: Unit.Amount) {
        self.amount = amount
    }

    public init(from decoder: any Decoder) throws {
        amount = try decoder.singleValueContainer().decode(Unit.Amount.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(amount)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.amount < rhs.amount }

    /// In whole milliseconds (`Int64.min` … `Int64.max`).
    public var milliseconds: Int64 { amount.saturatingProduct(with: Unit.nanosecondsPerUnit / 1_000_000) }

    /// In whole nanoseconds, 0 for a negative duration.
    public var nanoseconds: UInt64 { UInt64(max(0, amount.saturatingProduct(with: Unit.nanosecondsPerUnit))) }

    /// As a Swift `Duration` (to nanosecond precision).
    public var duration: Duration { .nanoseconds(amount.saturatingProduct(with: Unit.nanosecondsPerUnit)) }
}

extension ConfigDuration: CustomStringConvertible {
    /// The amount as a number prints (`1.5`), as validation messages quote it.
    public var description: String { "\(amount)" }
}

extension ConfigDuration: ExpressibleByIntegerLiteral where Unit.Amount: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Unit.Amount.IntegerLiteralType) {
        self.init(Unit.Amount(integerLiteral: value))
    }
}

extension ConfigDuration: ExpressibleByFloatLiteral where Unit.Amount: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Unit.Amount.FloatLiteralType) {
        self.init(Unit.Amount(floatLiteral: value))
    }
}

extension ConfigDuration where Unit.Amount == Double {
    /// The duration of `milliseconds`, in `Unit` (for defaults another module states in milliseconds).
    public init(milliseconds: Int64) {
        self.init(Double(milliseconds) / Double(Unit.nanosecondsPerUnit / 1_000_000))
    }
}

/// The unit of a ``ConfigDuration``: how long one is, and whether the file may give fractions of it.
public protocol ConfigDurationUnit: Sendable {
    /// `Double` where the file may write `1.5`; `Int64` where it must be whole (as it always had to be).
    associatedtype Amount: ConfigDurationAmount
    static var nanosecondsPerUnit: Int64 { get }
}

/// Seconds, fractions allowed (`idleTimeoutSeconds`).
public enum InSeconds: ConfigDurationUnit {
    public static let nanosecondsPerUnit: Int64 = 1_000_000_000
    public typealias Amount = Double
}

/// Whole seconds (`apns.tokenMaxAgeSeconds`, compared with a token's `iat`).
public enum InWholeSeconds: ConfigDurationUnit {
    public static let nanosecondsPerUnit: Int64 = 1_000_000_000
    public typealias Amount = Int64
}

/// Whole milliseconds (`delivery.lowPriorityDelayMilliseconds`).
public enum InMilliseconds: ConfigDurationUnit {
    public static let nanosecondsPerUnit: Int64 = 1_000_000
    public typealias Amount = Int64
}

/// Hours, fractions allowed (`events.maxAgeHours`).
public enum InHours: ConfigDurationUnit {
    public static let nanosecondsPerUnit: Int64 = 3_600_000_000_000
    public typealias Amount = Double
}

/// Days, fractions allowed (`storage.maxAgeDays`).
public enum InDays: ConfigDurationUnit {
    public static let nanosecondsPerUnit: Int64 = 86_400_000_000_000
    public typealias Amount = Double
}

/// A number a ``ConfigDuration`` can be written in.
public protocol ConfigDurationAmount: Codable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// `self × factor`, truncated toward zero, saturated to `Int64`'s range (NaN: 0).
    func saturatingProduct(with factor: Int64) -> Int64
}

extension Double: ConfigDurationAmount {
    public func saturatingProduct(with factor: Int64) -> Int64 {
        let product = self * Double(factor)
        if product.isNaN { return 0 }
        // Int64.max is not a Double: 2^63 is the first value above it.
        if product >= 9_223_372_036_854_775_808.0 { return .max }
        if product < -9_223_372_036_854_775_808.0 { return .min }
        return Int64(product)
    }
}

extension Int64: ConfigDurationAmount {
    public func saturatingProduct(with factor: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: factor)
        guard overflow else { return product }
        return (self < 0) == (factor < 0) ? .max : .min
    }
}
