// APNs Sandbox — reasons, status codes and exact error bodies.
import APNsProtocol
import Testing

@Suite struct APNsErrorTests {
    /// Every reason of the reference's table has Apple's spelling and status, plus the sandbox's BadPayload.
    @Test func everyReasonHasApplesSpellingAndStatus() {
        let table: [String: Int] = [
            "BadCollapseId": 400, "BadDeviceToken": 400, "BadExpirationDate": 400, "BadMessageId": 400,
            "BadPriority": 400, "BadTopic": 400, "DeviceTokenNotForTopic": 400, "DuplicateHeaders": 400,
            "IdleTimeout": 400, "InvalidPushType": 400, "MissingDeviceToken": 400, "MissingTopic": 400,
            "PayloadEmpty": 400, "TopicDisallowed": 400, "BadPayload": 400,
            "BadCertificate": 403, "BadCertificateEnvironment": 403, "ExpiredProviderToken": 403, "Forbidden": 403,
            "InvalidProviderToken": 403, "MissingProviderToken": 403, "UnrelatedKeyIdInToken": 403,
            "BadEnvironmentKeyIdInToken": 403, "BadEnvironmentKeyInToken": 403,
            "BadPath": 404, "MethodNotAllowed": 405, "ExpiredToken": 410, "Unregistered": 410,
            "PayloadTooLarge": 413, "TooManyProviderTokenUpdates": 429, "TooManyRequests": 429,
            "InternalServerError": 500, "ServiceUnavailable": 503, "Shutdown": 503,
        ]
        #expect(APNsReason.allCases.count == table.count)
        for reason in APNsReason.allCases {
            #expect(table[reason.rawValue] == reason.status, "\(reason)")
        }
        for (name, status) in table {
            #expect(APNsReason(rawValue: name)?.status == status, "\(name)")
        }
    }

    /// The body is exactly {"reason":"X"} and the error's status is the reason's.
    @Test(arguments: APNsReason.allCases.filter { $0.status != 410 })
    func bodyIsExactlyTheReason(reason: APNsReason) {
        let error = APNsError(reason)
        #expect(error.status == reason.status)
        #expect(String(decoding: error.jsonBody, as: UTF8.self) == #"{"reason":"\#(reason.rawValue)"}"#)
    }

    /// A 410 body carries the timestamp in milliseconds after the reason.
    @Test func goneBodyCarriesTimestamp() {
        let unregistered = APNsError(.unregistered, timestamp: 1_454_096_879_000)
        #expect(unregistered.status == 410)
        #expect(String(decoding: unregistered.jsonBody, as: UTF8.self)
            == #"{"reason":"Unregistered","timestamp":1454096879000}"#)
        let expired = APNsError(.expiredToken, timestamp: 0)
        #expect(String(decoding: expired.jsonBody, as: UTF8.self) == #"{"reason":"ExpiredToken","timestamp":0}"#)
    }

    /// A timestamp is written only for 410, and a 410 without one has the plain body.
    @Test func timestampOnlyForGone() {
        #expect(String(decoding: APNsError(.badTopic, timestamp: 5).jsonBody, as: UTF8.self)
            == #"{"reason":"BadTopic"}"#)
        #expect(String(decoding: APNsError(.unregistered).jsonBody, as: UTF8.self) == #"{"reason":"Unregistered"}"#)
    }

    /// Errors compare by reason and timestamp, and describe themselves as "status reason".
    @Test func equalityAndDescription() {
        #expect(APNsError(.badTopic) == APNsError(.badTopic))
        #expect(APNsError(.unregistered, timestamp: 1) != APNsError(.unregistered, timestamp: 2))
        #expect(APNsError(.payloadTooLarge).description == "413 PayloadTooLarge")
    }

    /// A cause is for people: the body stays exactly Apple's, the description (logs) carries it.
    @Test func causeNeverReachesTheBody() {
        let error = APNsError(.invalidProviderToken, cause: "kid \"K\" unknown")
        #expect(String(decoding: error.jsonBody, as: UTF8.self) == #"{"reason":"InvalidProviderToken"}"#)
        #expect(error.description == #"403 InvalidProviderToken: kid "K" unknown"#)
        #expect(error.status == 403)
    }
}
