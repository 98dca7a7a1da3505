// APNs Sandbox — one request per reason the validators can produce, checked down to the response bytes.
import APNsProtocol
import Testing

@Suite struct ValidatorReasonMatrixTests {
    /// One failing input per reason, run through the public validators.
    struct Case: Sendable, CustomTestStringConvertible {
        let reason: APNsReason
        let status: Int
        let run: @Sendable () -> APNsError?

        var testDescription: String { reason.rawValue }
    }

    static let cases: [Case] = [
        Case(reason: .methodNotAllowed, status: 405) {
            PushRequestValidator.deviceToken(method: "GET", path: "/3/device/\(sampleTokenHex)").error
        },
        Case(reason: .badPath, status: 404) { PushRequestValidator.deviceToken(method: "POST", path: "/3/devices").error },
        Case(reason: .missingDeviceToken, status: 400) {
            PushRequestValidator.deviceToken(method: "POST", path: "/3/device/").error
        },
        Case(reason: .badDeviceToken, status: 400) {
            PushRequestValidator.deviceToken(method: "POST", path: "/3/device/xyz").error
        },
        Case(reason: .duplicateHeaders, status: 400) {
            PushRequestValidator.headers([("apns-topic", "a"), ("apns-topic", "a")]).error
        },
        Case(reason: .badMessageId, status: 400) { PushRequestValidator.headers([("apns-id", "1")]).error },
        Case(reason: .invalidPushType, status: 400) { PushRequestValidator.headers([("apns-push-type", "x")]).error },
        Case(reason: .badPriority, status: 400) { PushRequestValidator.headers([("apns-priority", "0")]).error },
        Case(reason: .badExpirationDate, status: 400) { PushRequestValidator.headers([("apns-expiration", "-1")]).error },
        Case(reason: .badCollapseId, status: 400) {
            PushRequestValidator.headers([("apns-collapse-id", String(repeating: "x", count: 65))]).error
        },
        Case(reason: .badTopic, status: 400) { PushRequestValidator.headers([("apns-topic", "a b")]).error },
        Case(reason: .badTopic, status: 400) {
            PushRequestValidator.bundleID(topic: "a.b", pushType: .voip, priority: 10).error
        },
        Case(reason: .badPriority, status: 400) {
            PushRequestValidator.bundleID(topic: "a.b", pushType: .background, priority: 10).error
        },
        Case(reason: .payloadEmpty, status: 400) { PushRequestValidator.payload([], pushType: nil).error },
        Case(reason: .payloadTooLarge, status: 413) {
            PushRequestValidator.payload(payload(ofSize: 4097), pushType: .alert).error
        },
        Case(reason: .badPayload, status: 400) { PushRequestValidator.payload(Array("[]".utf8), pushType: nil).error },
        Case(reason: .missingProviderToken, status: 403) { ProviderToken.parse(authorization: nil).error },
        Case(reason: .invalidProviderToken, status: 403) { ProviderToken.parse(authorization: "bearer x").error },
        Case(reason: .expiredProviderToken, status: 403) {
            ProviderToken.parse(authorization: "bearer " + makeJWT()).value?.checkTime(now: 1_700_003_601).error
        },
        Case(reason: .invalidProviderToken, status: 403) {
            ProviderToken.parse(authorization: "bearer " + makeJWT()).value?.checkTime(now: 1_699_999_939).error
        },
    ]

    /// Each input fails with its reason, the reason's status, and exactly {"reason":"…"} as the body.
    @Test(arguments: cases)
    func producesReasonStatusAndBody(testCase: Case) throws {
        let error = try #require(testCase.run())
        #expect(error.reason == testCase.reason)
        #expect(error.status == testCase.status)
        #expect(error.timestamp == nil)
        #expect(String(decoding: error.jsonBody, as: UTF8.self) == "{\"reason\":\"\(testCase.reason.rawValue)\"}")
    }
}
