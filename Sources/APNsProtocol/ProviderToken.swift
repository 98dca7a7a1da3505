// APNs Sandbox — the JWT provider token of token-based connections.
import Support

/// A parsed JWT provider token (reference §2.1). The signature is not verified here: the caller checks
/// ``signature`` over ``signingInput`` with the team's key, found by ``keyID``.
public struct ProviderToken: Sendable, Equatable {
    /// The longest accepted token, in bytes; real ES256 tokens are about 200.
    public static let maxTokenBytes = 4096

    /// The compact JWT (`header.claims.signature`) without the `bearer ` scheme; a cache key.
    public let raw: String
    /// The JOSE header's `kid`: the 10-character key ID (length not checked here).
    public let keyID: String
    /// The `iss` claim: the 10-character team ID (length not checked here).
    public let teamID: String
    /// The `iat` claim, in seconds since the epoch.
    public let issuedAt: Int64
    /// The JOSE header's `alg`; always `ES256` once parsed.
    public let algorithm: String
    /// The bytes the signature covers: the ASCII of `header.claims` as sent.
    public let signingInput: [UInt8]
    /// The base64url-decoded signature: raw `r||s` (64 bytes) per RFC 7515, though APNs also accepts DER.
    public let signature: [UInt8]

    /// Parses an `authorization` header value.
    ///
    /// Rules, in order:
    /// 1. Absent, empty, only white space, or only the scheme (`bearer`) → `MissingProviderToken`.
    /// 2. A scheme other than `bearer` (compared case-insensitively), or none → `InvalidProviderToken`.
    ///    One or more spaces or tabs may follow the scheme; surrounding white space is ignored.
    /// 3. Not three non-empty base64url parts, over ``maxTokenBytes``, a header or claims part that is
    ///    not a JSON object, `kid` or `iss` not a non-empty string, `iat` not a finite number (a string,
    ///    `null`, or beyond `Int64` seconds; a fraction is truncated, see ``numericDate(_:)``), or `alg` not
    ///    exactly `ES256` → `InvalidProviderToken`.
    /// - Parameter authorization: The raw header value.
    /// - Returns: The token, or the reason for rejecting the push.
    public static func parse(authorization: String?) -> Result<ProviderToken, APNsError> {
        guard let authorization else { return .failure(APNsError(.missingProviderToken)) }
        let value = trimmingBlanks(Substring(authorization))
        guard !value.isEmpty else { return .failure(APNsError(.missingProviderToken)) }
        guard let blank = value.utf8.firstIndex(where: isBlank) else {
            let reason: APNsReason = ASCII.equalsIgnoringCase(value, "bearer") ? .missingProviderToken : .invalidProviderToken
            return .failure(APNsError(reason))
        }
        guard ASCII.equalsIgnoringCase(value[..<blank], "bearer") else {
            return .failure(APNsError(.invalidProviderToken))
        }
        let jwt = trimmingBlanks(value[blank...])
        guard let token = ProviderToken(jwt: jwt) else { return .failure(APNsError(.invalidProviderToken)) }
        return .success(token)
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
        if issuedAt <= now {
            let (age, overflow) = now.subtractingReportingOverflow(issuedAt)
            guard !overflow, age <= maxAge else { return .failure(APNsError(.expiredProviderToken)) }
        } else {
            let (ahead, overflow) = issuedAt.subtractingReportingOverflow(now)
            guard !overflow, ahead <= allowedSkew else { return .failure(APNsError(.invalidProviderToken)) }
        }
        return .success(())
    }

    /// Parses a compact JWT; nil when any rule of ``parse(authorization:)``'s step 3 fails.
    private init?(jwt: Substring) {
        let utf8 = jwt.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maxTokenBytes,
            let firstDot = utf8.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = utf8[utf8.index(after: firstDot)...].firstIndex(of: UInt8(ascii: "."))
        else { return nil }
        let headerPart = jwt[..<firstDot]
        let claimsPart = jwt[jwt.index(after: firstDot)..<secondDot]
        let signaturePart = jwt[jwt.index(after: secondDot)...]
        guard !headerPart.isEmpty, !claimsPart.isEmpty, !signaturePart.isEmpty,
            !signaturePart.utf8.contains(UInt8(ascii: ".")),
            let headerJSON = Base64URL.decode(headerPart),
            let claimsJSON = Base64URL.decode(claimsPart),
            let signature = Base64URL.decode(signaturePart), !signature.isEmpty
        else { return nil }

        var algorithm: String?
        var keyID: String?
        var teamID: String?
        var issuedAt: Int64?
        do {
            var header = JSONReader(headerJSON)
            try header.readDocument { reader, key in
                switch key {
                case "alg": algorithm = Self.string(try reader.readScalar())
                case "kid": keyID = Self.string(try reader.readScalar())
                default: try reader.skipValue()
                }
            }
            var claims = JSONReader(claimsJSON)
            try claims.readDocument { reader, key in
                switch key {
                case "iss": teamID = Self.string(try reader.readScalar())
                case "iat": issuedAt = Self.numericDate(try reader.readTree())
                default: try reader.skipValue()
                }
            }
        } catch {
            return nil
        }
        guard algorithm == "ES256", let algorithm, let keyID, !keyID.isEmpty, let teamID, !teamID.isEmpty,
            let issuedAt
        else { return nil }
        self.raw = String(jwt)
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
        self.algorithm = algorithm
        self.signingInput = Array(utf8[..<secondDot])
        self.signature = signature
    }

    /// An RFC 7519 NumericDate in whole seconds: any finite JSON number (`1700000000`, `1700000000.25`,
    /// `1.7e9`), a fraction truncated toward zero — the PyAPNs2 family signs `"iat": time.time()`, which Apple
    /// accepts. Not a number (a string, `null`), or beyond the range of `Int64` seconds: nil.
    static func numericDate(_ value: JSON) -> Int64? {
        guard case .number(let text) = value else { return nil }
        if let whole = Int64(text) { return whole }
        guard let seconds = Double(text), seconds.isFinite, seconds > -9.2e18, seconds < 9.2e18 else { return nil }
        return Int64(seconds.rounded(.towardZero))
    }

    private static func string(_ value: JSONReader.Scalar) -> String? {
        if case .string(let text) = value { text } else { nil }
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    private static func trimmingBlanks(_ text: Substring) -> Substring {
        guard let first = text.utf8.firstIndex(where: { !isBlank($0) }),
            let last = text.utf8.lastIndex(where: { !isBlank($0) })
        else { return text[text.endIndex...] }
        return text[first...last]
    }
}
