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

    /// A missing or foreign scheme, or a malformed JWT, is InvalidProviderToken (403).
    @Test(arguments: malformed)
    func rejectsMalformedTokens(authorization: String) {
        #expect(ProviderToken.parse(authorization: authorization).reason == .invalidProviderToken, "\(authorization)")
    }

    /// Bad JOSE headers or claims are InvalidProviderToken.
    @Test(arguments: [
        (#"{"alg":"RS256","kid":"K"}"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"es256","kid":"K"}"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"none","kid":"K"}"#, #"{"iss":"T","iat":1}"#),
        (#"{"kid":"K"}"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"ES256"}"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"ES256","kid":""}"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"ES256","kid":7}"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iat":1}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"","iat":1}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T"}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":"1700000000"}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":99999999999999999999}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":1e400}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":null}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":true}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":[1]}"#),
        (#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":1,}"#),
        (#"["ES256"]"#, #"{"iss":"T","iat":1}"#),
        (#"{"alg":"ES256","kid":"K"}"#, "not json"),
    ])
    func rejectsBadContents(header: String, claims: String) {
        let jwt = makeJWT(header: header, claims: claims)
        #expect(ProviderToken.parse(authorization: "bearer " + jwt).reason == .invalidProviderToken)
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
    }

    /// iat up to 60 s in the future is valid; further ahead is InvalidProviderToken.
    @Test func limitsFutureSkew() throws {
        let token = try #require(ProviderToken.parse(authorization: "bearer " + makeJWT()).value)
        let iat = token.issuedAt
        #expect(token.checkTime(now: iat - 60).error == nil)
        #expect(token.checkTime(now: iat - 61).reason == .invalidProviderToken)
        #expect(token.checkTime(now: iat - 5, allowedSkew: 0).reason == .invalidProviderToken)
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
