// APNs Sandbox — JWT provider token parsing and time rules.
import APNsProtocol
import Testing

@Suite struct ProviderTokenTests {
    /// A well-formed ES256 token yields key ID, team ID, iat, signing input and signature.
    @Test func parsesValidToken() throws {
        let signature = (0..<64).map { UInt8($0) }
        let jwt = makeJWT(signature: signature)
        let token = try #require(ProviderToken.parse(authorization: "bearer \(jwt)").value)
        #expect(token.raw == jwt)
        #expect(token.keyID == "ABC123DEFG")
        #expect(token.teamID == "DEF123GHIJ")
        #expect(token.issuedAt == 1_700_000_000)
        #expect(token.algorithm == "ES256")
        #expect(token.signature == signature)
        let parts = jwt.split(separator: ".")
        #expect(token.signingInput == Array("\(parts[0]).\(parts[1])".utf8))
    }

    /// The scheme is case-insensitive; extra blanks around the token are ignored; other members are skipped.
    @Test(arguments: ["Bearer ", "BEARER ", "bearer\t", "bearer   ", "  bearer "])
    func acceptsSchemeVariants(prefix: String) {
        #expect(ProviderToken.parse(authorization: prefix + makeJWT() + " ").value != nil)
    }

    /// Extra header and claim members (typ, exp, nested values) do not matter.
    @Test func ignoresOtherMembers() {
        let jwt = makeJWT(
            header: #"{"typ":"JWT","alg":"ES256","kid":"K","x5c":["a"]}"#,
            claims: #"{"iat":1700000000,"iss":"T","exp":1,"nested":{"a":[true,null]}}"#)
        #expect(ProviderToken.parse(authorization: "bearer " + jwt).value?.keyID == "K")
    }

    /// No header, an empty or blank one, or only the scheme is MissingProviderToken (403).
    @Test(arguments: [nil, "", "   ", "bearer", "Bearer ", "bearer \t "] as [String?])
    func reportsMissingToken(authorization: String?) {
        let error = ProviderToken.parse(authorization: authorization).error
        #expect(error?.reason == .missingProviderToken)
        #expect(error?.status == 403)
    }

    private static let malformed: [String] = {
        let jwt = makeJWT()
        let parts = jwt.split(separator: ".").map(String.init)
        return [
            jwt, "Basic " + jwt, "bearer: " + jwt, "bearerX " + jwt, "bearer garbage", "bearer a.b", "bearer a.b.c.d",
            "bearer ..", "bearer " + jwt + ".x", "bearer " + jwt + "=", "bearer " + makeJWT(signature: []),
            "bearer " + jwt + "+/", "bearer " + parts[0] + ".." + parts[2], "bearer " + jwt + " " + jwt,
        ]
    }()

    /// A missing or foreign scheme, or a malformed JWT, is InvalidProviderToken (403), with a cause.
    @Test(arguments: malformed)
    func rejectsMalformedTokens(authorization: String) {
        let error = ProviderToken.parse(authorization: authorization).error
        #expect(error?.reason == .invalidProviderToken, "\(authorization)")
        #expect(error?.cause?.isEmpty == false, "\(authorization)")
    }

    /// Each refusal before the JWT says which rule.
    @Test(arguments: [
        (nil, "no authorization header"), ("", "the authorization header is empty"), ("bearer", "no token after bearer"),
        ("Basic abc", #"the authorization scheme is "Basic", not bearer"#), (makeJWT(), "authorization is not \"bearer <token>\""),
        ("bearer a.b", "not three base64url parts (header.claims.signature)"),
        ("bearer a.b.c.d", "not three base64url parts (header.claims.signature)"),
        ("bearer " + makeJWT(signature: []), "not three base64url parts (header.claims.signature)"),
        ("bearer " + makeJWT() + "+/", "the signature is not base64url"),
        ("bearer *." + makeJWT().split(separator: ".")[1] + ".AA", "the header is not base64url"),
    ] as [(String?, String)])
    func namesTheCauseOfAMalformedToken(authorization: String?, cause: String) {
        #expect(ProviderToken.parse(authorization: authorization).error?.cause == cause)
    }

    /// Bad JOSE headers or claims are InvalidProviderToken, each with its cause.
    @Test(arguments: [
        (#"{"alg":"RS256","kid":"K"}"#, #"{"iss":"T","iat":1}"#, #"alg is "RS256", not ES256"#),
        (#"{"alg":"HS256","kid":"K"}"#, #"{"iss":"T","iat":1}"#, #"alg is "HS256", not ES256"#),
        (#"{"alg":"es256","kid":"K"}"#, #"{"iss":"T","iat":1}"#, #"alg is "es256", not ES256"#),
        (#"{"alg":"none","kid":"K"}"#, #"{"iss":"T","iat":1}"#, #"alg is "none", not ES256"#),
        (#"{"alg":256,"kid":"K"}"#, #"{"iss":"T","iat":1}"#, "alg is the number 256, not ES256"),
        (#"{"kid":"K"}"#, #"{"iss":"T","iat":1}"#, "alg is missing (ES256 is required)"),
        (#"{"alg":"ES256"}"#, #"{"iss":"T","iat":1}"#, "kid is missing"),
        (#"{"alg":"ES256","kid":""}"#, #"{"iss":"T","iat":1}"#, "kid is empty"),
        (#"{"alg":"ES256","kid":7}"#, #"{"iss":"T","iat":1}"#, "kid is the number 7, not a string"),
        (#"{"alg":"ES256","kid":["K"]}"#, #"{"iss":"T","iat":1}"#, "kid is an array, not a string"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iat":1}"#, "iss is missing"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"","iat":1}"#, "iss is empty"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":null,"iat":1}"#, "iss is null, not a string"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T"}"#, "iat is missing"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":99999999999999999999}"#, "iat 99999999999999999999 is beyond the range of seconds"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":1e400}"#, "iat 1e400 is beyond the range of seconds"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":null}"#, "iat is null, not a number"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":true}"#, "iat is a boolean, not a number"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":[1]}"#, "iat is an array, not a number"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":{}}"#, "iat is an object, not a number"),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":1,}"#, "the claims are not a JSON object"),
        (#"["ES256"]"#, #"{"iss":"T","iat":1}"#, "the header is not a JSON object"),
        (#"{"alg":"ES256","kid":"K"}"#, "not json", "the claims are not a JSON object"),
    ])
    func rejectsBadContents(header: String, claims: String, cause: String) {
        let jwt = makeJWT(header: header, claims: claims)
        let error = ProviderToken.parse(authorization: "bearer " + jwt).error
        #expect(error?.reason == .invalidProviderToken)
        #expect(error?.cause == cause)
    }

    /// `iat` is an RFC 7519 NumericDate: a fraction or an exponent is accepted (PyAPNs2 signs
    /// `time.time()`), truncated to whole seconds.
    @Test(arguments: [
        ("1700000000", 1_700_000_000), ("1700000000.999", 1_700_000_000), ("1.7e9", 1_700_000_000),
        ("1700000000.0", 1_700_000_000), ("-1.5", -1), ("17E8", 1_700_000_000),
    ] as [(String, Int64)])
    func acceptsNumericDates(iat: String, seconds: Int64) throws {
        let jwt = makeJWT(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iss":"T","iat":\#(iat)}"#)
        let token = try #require(ProviderToken.parse(authorization: "bearer " + jwt).value)
        #expect(token.issuedAt == seconds)
    }

    /// `iat` as a JSON string of plain decimal digits is accepted too (kalyke-apns signs
    /// `"iat": str(int(time))`), up to 19 digits.
    @Test(arguments: [
        ("1700000000", 1_700_000_000), ("0", 0), ("0001700000000", 1_700_000_000),
        ("9223372036854775807", Int64.max),
    ] as [(String, Int64)])
    func acceptsAStringOfDigits(iat: String, seconds: Int64) throws {
        let jwt = makeJWT(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iss":"T","iat":"\#(iat)"}"#)
        let token = try #require(ProviderToken.parse(authorization: "bearer " + jwt).value)
        #expect(token.issuedAt == seconds)
    }

    /// Any other string is refused: a sign, a fraction, an exponent, white space, empty, other digits, or more
    /// than fits `Int64` seconds.
    @Test(arguments: [
        ("12.5", #"iat is a string that is not a plain integer ("12.5")"#),
        ("-5", #"iat is a string that is not a plain integer ("-5")"#),
        ("+5", #"iat is a string that is not a plain integer ("+5")"#),
        ("1e9", #"iat is a string that is not a plain integer ("1e9")"#),
        (" 123", #"iat is a string that is not a plain integer (" 123")"#),
        ("123 ", #"iat is a string that is not a plain integer ("123 ")"#),
        ("", #"iat is a string that is not a plain integer ("")"#),
        ("0x10", #"iat is a string that is not a plain integer ("0x10")"#),
        ("１２３", #"iat is a string that is not a plain integer ("１２３")"#),
        ("9223372036854775808", "iat is a string of 19 digits, beyond the range of seconds"),
        ("12345678901234567890", "iat is a string of 20 digits, beyond the range of seconds"),
    ])
    func refusesOtherStrings(iat: String, cause: String) {
        let jwt = makeJWT(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iss":"T","iat":"\#(iat)"}"#)
        let error = ProviderToken.parse(authorization: "bearer " + jwt).error
        #expect(error?.reason == .invalidProviderToken, "\(iat)")
        #expect(error?.cause == cause)
    }

    /// Tokens over the size cap are InvalidProviderToken.
    @Test func rejectsOversizedToken() {
        let jwt = makeJWT(signature: [UInt8](repeating: 1, count: ProviderToken.maxTokenBytes))
        #expect(ProviderToken.parse(authorization: "bearer " + jwt).reason == .invalidProviderToken)
    }

    // MARK: Time

    /// iat up to exactly one hour old is valid; one second more is ExpiredProviderToken.
    @Test func expiresAfterOneHour() throws {
        let token = try #require(ProviderToken.parse(authorization: "bearer " + makeJWT()).value)
        let iat = token.issuedAt
        #expect(token.checkTime(now: iat).error == nil)
        #expect(token.checkTime(now: iat + 3600).error == nil)
        #expect(token.checkTime(now: iat + 3601).reason == .expiredProviderToken)
        #expect(token.checkTime(now: iat + 100, maxAge: 100).error == nil)
        #expect(token.checkTime(now: iat + 101, maxAge: 100).reason == .expiredProviderToken)
        #expect(token.checkTime(now: iat + 3601).error?.cause == "issued 60 min 1 s ago (max 60 min)")
        #expect(token.checkTime(now: iat + 3 * 3600).error?.cause == "issued 3 h ago (max 60 min)")
    }

    /// iat up to 60 s in the future is valid; further ahead is InvalidProviderToken.
    @Test func limitsFutureSkew() throws {
        let token = try #require(ProviderToken.parse(authorization: "bearer " + makeJWT()).value)
        let iat = token.issuedAt
        #expect(token.checkTime(now: iat - 60).error == nil)
        #expect(token.checkTime(now: iat - 61).reason == .invalidProviderToken)
        #expect(token.checkTime(now: iat - 5, allowedSkew: 0).reason == .invalidProviderToken)
        #expect(token.checkTime(now: iat - 300).error?.cause == "issued 5 min in the future (max 60 s)")
    }

    /// Durations in causes read as people write them.
    @Test(arguments: [
        (0, "0 s"), (45, "45 s"), (119, "119 s"), (120, "2 min"), (3601, "60 min 1 s"), (7200, "2 h"),
        (3 * 3600 + 20 * 60 + 5, "3 h 20 min"), (5 * 86400, "5 days"), (-3, "0 s"),
    ] as [(Int64, String)])
    func durationsForPeople(seconds: Int64, text: String) {
        #expect(ProviderToken.duration(seconds) == text)
    }

    /// Extreme iat values do not overflow.
    @Test func extremeTimesDoNotOverflow() throws {
        let old = try #require(ProviderToken.parse(authorization: "bearer " + makeJWT(
            claims: #"{"iss":"T","iat":-9223372036854775808}"#)).value)
        #expect(old.checkTime(now: .max).reason == .expiredProviderToken)
        let future = try #require(ProviderToken.parse(authorization: "bearer " + makeJWT(
            claims: #"{"iss":"T","iat":9223372036854775807}"#)).value)
        #expect(future.checkTime(now: .min).reason == .invalidProviderToken)
        #expect(future.checkTime(now: -1).reason == .invalidProviderToken)
    }
}
