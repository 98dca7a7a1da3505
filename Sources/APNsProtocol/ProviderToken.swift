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
    /// 3. The JWT's rules (``decode(jwt:)``) → `InvalidProviderToken`.
    ///
    /// Every failure carries its ``APNsError/cause``.
    /// - Parameter authorization: The raw header value.
    /// - Returns: The token, or the reason for rejecting the push.
    public static func parse(authorization: String?) -> Result<ProviderToken, APNsError> {
        guard let authorization else {
            return .failure(APNsError(.missingProviderToken, cause: "no authorization header"))
        }
        let value = trimmingBlanks(Substring(authorization))
        guard !value.isEmpty else {
            return .failure(APNsError(.missingProviderToken, cause: "the authorization header is empty"))
        }
        guard let blank = value.utf8.firstIndex(where: isBlank) else {
            if ASCII.equalsIgnoringCase(value, "bearer") {
                return .failure(APNsError(.missingProviderToken, cause: "no token after bearer"))
            }
            return invalid("authorization is not \"bearer <token>\"")
        }
        guard ASCII.equalsIgnoringCase(value[..<blank], "bearer") else {
            return invalid("the authorization scheme is \(quoted(String(value[..<blank]))), not bearer")
        }
        return decode(jwt: trimmingBlanks(value[blank...]))
    }

    /// Parses a compact JWT (`header.claims.signature`, no scheme).
    ///
    /// `InvalidProviderToken`, with its cause, when: it is over ``maxTokenBytes``; it is not three non-empty
    /// base64url parts; the header or claims part is not a JSON object; `alg` is not exactly `ES256`; `kid` or
    /// `iss` is not a non-empty string; `iat` is not a NumericDate (``numericDate(_:)``: a finite number, or a
    /// string of digits). The signature is not checked here.
    public static func decode(jwt: Substring) -> Result<ProviderToken, APNsError> {
        let utf8 = jwt.utf8
        guard utf8.count <= Self.maxTokenBytes else {
            return invalid("the token is \(utf8.count) bytes, over the limit of \(Self.maxTokenBytes)")
        }
        guard let firstDot = utf8.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = utf8[utf8.index(after: firstDot)...].firstIndex(of: UInt8(ascii: "."))
        else { return invalid(notThreeParts) }
        let headerPart = jwt[..<firstDot]
        let claimsPart = jwt[jwt.index(after: firstDot)..<secondDot]
        let signaturePart = jwt[jwt.index(after: secondDot)...]
        guard !headerPart.isEmpty, !claimsPart.isEmpty, !signaturePart.isEmpty,
            !signaturePart.utf8.contains(UInt8(ascii: "."))
        else { return invalid(notThreeParts) }
        guard let headerJSON = Base64URL.decode(headerPart) else { return invalid("the header is not base64url") }
        guard let claimsJSON = Base64URL.decode(claimsPart) else { return invalid("the claims are not base64url") }
        guard let signature = Base64URL.decode(signaturePart), !signature.isEmpty else {
            return invalid("the signature is not base64url")
        }

        var algorithm: JSONReader.Scalar?
        var keyID: JSONReader.Scalar?
        do {
            var header = JSONReader(headerJSON)
            try header.readDocument { reader, key in
                switch key {
                case "alg": algorithm = try reader.readScalar()
                case "kid": keyID = try reader.readScalar()
                default: try reader.skipValue()
                }
            }
        } catch {
            return invalid("the header is not a JSON object")
        }
        var teamID: JSONReader.Scalar?
        var issuedAtValue: JSON?
        do {
            var claims = JSONReader(claimsJSON)
            try claims.readDocument { reader, key in
                switch key {
                case "iss": teamID = try reader.readScalar()
                case "iat": issuedAtValue = try reader.readTree()
                default: try reader.skipValue()
                }
            }
        } catch {
            return invalid("the claims are not a JSON object")
        }
        guard case .string("ES256") = algorithm else {
            switch algorithm {
            case nil: return invalid("alg is missing (ES256 is required)")
            case .string(let other): return invalid("alg is \(quoted(other)), not ES256")
            case let other?: return invalid("alg is \(describe(other)), not ES256")
            }
        }
        let kid: String
        switch requiredString(keyID, name: "kid") {
        case .success(let value): kid = value
        case .failure(let error): return .failure(error)
        }
        let team: String
        switch requiredString(teamID, name: "iss") {
        case .success(let value): team = value
        case .failure(let error): return .failure(error)
        }
        guard let issuedAtValue else { return invalid("iat is missing") }
        let issuedAt: Int64
        switch numericDate(issuedAtValue) {
        case .success(let seconds): issuedAt = seconds
        case .failure(let error): return .failure(error)
        }
        return .success(ProviderToken(
            raw: String(jwt), keyID: kid, teamID: team, issuedAt: issuedAt, algorithm: "ES256",
            signingInput: Array(utf8[..<secondDot]), signature: signature))
    }

    private init(
        raw: String, keyID: String, teamID: String, issuedAt: Int64, algorithm: String, signingInput: [UInt8],
        signature: [UInt8]
    ) {
        self.raw = raw
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
        self.algorithm = algorithm
        self.signingInput = signingInput
        self.signature = signature
    }

    private static let notThreeParts = "not three base64url parts (header.claims.signature)"

    /// `kid` or `iss`: a non-empty string.
    private static func requiredString(_ value: JSONReader.Scalar?, name: String) -> Result<String, APNsError> {
        switch value {
        case nil: invalid("\(name) is missing")
        case .string(let text) where text.isEmpty: invalid("\(name) is empty")
        case .string(let text): .success(text)
        case let other?: invalid("\(name) is \(describe(other)), not a string")
        }
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
