// APNs Sandbox — the provider token's `iat` and time rules, and the causes its refusals carry.
import Support

extension ProviderToken {
    /// The longest `iat` string accepted: 19 digits, as many as `Int64.max` has.
    static let maxIssuedAtDigits = 19

    /// An RFC 7519 NumericDate in whole seconds.
    ///
    /// - Any finite JSON number (`1700000000`, `1700000000.25`, `1.7e9`), a fraction truncated toward zero: the
    ///   PyAPNs2 family signs `"iat": time.time()`, which Apple accepts.
    /// - A JSON string of plain decimal digits (`"1700000000"`: ASCII digits only, no sign, fraction, exponent or
    ///   white space, at most ``maxIssuedAtDigits``): `kalyke-apns` has signed `"iat": str(int(…))` in every
    ///   release since 2022 and works against APNs, so Apple evidently accepts it too.
    ///
    /// Anything else (another string, `null`, a boolean, an array, an object, beyond the range of `Int64`
    /// seconds) is `InvalidProviderToken`, with the cause.
    static func numericDate(_ value: JSON) -> Result<Int64, APNsError> {
        switch value {
        case .number(let text):
            if let whole = Int64(text) { return .success(whole) }
            guard let seconds = Double(text), seconds.isFinite, seconds > -9.2e18, seconds < 9.2e18 else {
                return invalid("iat \(text.prefix(32)) is beyond the range of seconds")
            }
            return .success(Int64(seconds.rounded(.towardZero)))
        case .string(let text):
            let digits = text.utf8
            guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                return invalid("iat is a string that is not a plain integer (\(quoted(text)))")
            }
            guard digits.count <= maxIssuedAtDigits, let seconds = Int64(text) else {
                return invalid("iat is a string of \(digits.count) digits, beyond the range of seconds")
            }
            return .success(seconds)
        case .null: return invalid("iat is null, not a number")
        case .bool: return invalid("iat is a boolean, not a number")
        case .array: return invalid("iat is an array, not a number")
        case .object: return invalid("iat is an object, not a number")
        }
    }

    /// Applies the time rules.
    ///
    /// - Parameters:
    ///   - now: The current time, in seconds since the epoch.
    ///   - maxAge: The oldest accepted `iat`, in seconds before `now`; exactly `maxAge` old is still valid.
    ///   - allowedSkew: How far `iat` may lie in the future, in seconds; exactly `allowedSkew` is valid.
    /// - Returns: `ExpiredProviderToken` when `iat` is older than `maxAge`; `InvalidProviderToken` when it is
    ///   further in the future than `allowedSkew` (Apple does not document this case).
    public func checkTime(now: Int64, maxAge: Int64 = 3600, allowedSkew: Int64 = 60) -> Result<Void, APNsError> {
        Self.checkTime(issuedAt: issuedAt, now: now, maxAge: maxAge, allowedSkew: allowedSkew)
    }

    /// The rules of ``checkTime(now:maxAge:allowedSkew:)`` for an issue time alone (the provider endpoint keeps
    /// only that of a connection's current token). Each failure's cause says how old, or how far ahead, it was.
    public static func checkTime(
        issuedAt: Int64, now: Int64, maxAge: Int64 = 3600, allowedSkew: Int64 = 60
    ) -> Result<Void, APNsError> {
        if issuedAt <= now {
            let (age, overflow) = now.subtractingReportingOverflow(issuedAt)
            if overflow {
                return .failure(APNsError(.expiredProviderToken, cause: "issued at \(issuedAt), far too long ago"))
            }
            guard age <= maxAge else {
                return .failure(APNsError(
                    .expiredProviderToken, cause: "issued \(duration(age)) ago (max \(duration(maxAge)))"))
            }
        } else {
            let (ahead, overflow) = issuedAt.subtractingReportingOverflow(now)
            if overflow { return invalid("issued at \(issuedAt), far in the future") }
            guard ahead <= allowedSkew else {
                return invalid("issued \(duration(ahead)) in the future (max \(duration(allowedSkew)))")
            }
        }
        return .success(())
    }

    /// Seconds for people: `45 s`, `5 min`, `60 min 1 s`, `3 h`, `3 h 20 min`, `4 days`.
    public static func duration(_ seconds: Int64) -> String {
        let seconds = max(0, seconds)
        if seconds < 120 { return "\(seconds) s" }
        if seconds < 2 * 3600 {
            let rest = seconds % 60
            return rest == 0 ? "\(seconds / 60) min" : "\(seconds / 60) min \(rest) s"
        }
        if seconds < 2 * 86400 {
            let minutes = seconds % 3600 / 60
            return minutes == 0 ? "\(seconds / 3600) h" : "\(seconds / 3600) h \(minutes) min"
        }
        return "\(seconds / 86400) days"
    }

    /// `InvalidProviderToken` with `cause`.
    static func invalid<T>(_ cause: String) -> Result<T, APNsError> {
        .failure(APNsError(.invalidProviderToken, cause: cause))
    }

    /// Client text in a cause: quoted and escaped, at most 32 characters.
    public static func quoted(_ text: String) -> String {
        JSONString.quoted(text.count > 32 ? String(text.prefix(32)) + "…" : text)
    }

    /// What a JSON value is, for a cause: `a number`, `null`, `an object`, …
    static func describe(_ value: JSONReader.Scalar) -> String {
        switch value {
        case .string(let text): "the string \(quoted(text))"
        case .integer(let number): "the number \(number)"
        case .number: "a number"
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        case .object: "an object"
        case .array: "an array"
        }
    }
}
