// APNs Sandbox — method, path and per-push-type topic rules.
import APNsProtocol
import Testing

@Suite struct PushRequestValidatorTests {
    // MARK: Method and path

    /// POST /3/device/<hex> yields the token, lowercased.
    @Test func acceptsDevicePath() throws {
        let token = try #require(
            PushRequestValidator.deviceToken(method: "POST", path: "/3/device/\(sampleTokenHex.uppercased())").value)
        #expect(token.hex == sampleTokenHex)
    }

    /// A query string is ignored.
    @Test func ignoresQuery() {
        let result = PushRequestValidator.deviceToken(method: "POST", path: "/3/device/\(sampleTokenHex)?x=1&y")
        #expect(result.value?.hex == sampleTokenHex)
    }

    /// Any method but POST is MethodNotAllowed (405), checked before the path.
    @Test(arguments: ["GET", "PUT", "post", "HEAD", "DELETE", ""])
    func rejectsOtherMethods(method: String) {
        #expect(PushRequestValidator.deviceToken(method: method, path: "/3/device/\(sampleTokenHex)").reason
            == .methodNotAllowed)
        #expect(PushRequestValidator.deviceToken(method: method, path: "/nowhere").error?.status == 405)
    }

    private static let otherPaths: [String] = {
        let hex = sampleTokenHex
        return [
            "/", "", "/3", "/3/", "/3/devices/" + hex, "/4/device/" + hex, "/3/device" + hex, "/3/DEVICE/" + hex,
            "3/device/" + hex, "/3/device/" + hex + "/", "/3/device/" + hex + "/extra", "/3/device//",
            "//3/device/" + hex, "/4/broadcasts/apps/com.example.app",
        ]
    }()

    /// Paths outside /3/device/ are BadPath (404).
    @Test(arguments: otherPaths)
    func rejectsOtherPaths(path: String) {
        let error = PushRequestValidator.deviceToken(method: "POST", path: Substring(path)).error
        #expect(error?.reason == .badPath)
        #expect(error?.status == 404)
    }

    /// /3/device and /3/device/ (also with a query) are MissingDeviceToken (400).
    @Test(arguments: ["/3/device", "/3/device/", "/3/device/?a=b", "/3/device?a=b"])
    func reportsMissingToken(path: String) {
        #expect(PushRequestValidator.deviceToken(method: "POST", path: Substring(path)).reason == .missingDeviceToken)
    }

    private static let badTokens: [String] = {
        let short = String(sampleTokenHex.dropLast())
        return [
            "abc", short, short + "z", String(repeating: "a", count: 30), String(repeating: "a", count: 402),
            "%30" + sampleTokenHex, sampleTokenHex + "%20",
        ]
    }()

    /// A token that is not even-length hex of 32–400 digits is BadDeviceToken (400).
    @Test(arguments: badTokens)
    func rejectsBadTokens(token: String) {
        let error = PushRequestValidator.deviceToken(method: "POST", path: Substring("/3/device/" + token)).error
        #expect(error?.reason == .badDeviceToken)
        #expect(error.map { String(decoding: $0.jsonBody, as: UTF8.self) } == #"{"reason":"BadDeviceToken"}"#)
    }

    // MARK: Topic and priority per push type

    /// Each suffixed type accepts bundle ID + its suffix and returns the bundle ID.
    @Test(arguments: PushType.allCases.filter { $0.topicSuffix != nil })
    func acceptsCorrectSuffix(type: PushType) throws {
        let suffix = try #require(type.topicSuffix)
        let result = PushRequestValidator.bundleID(topic: "com.example.app" + suffix, pushType: type, priority: 5)
        #expect(result.value == "com.example.app")
    }

    /// Each suffixed type rejects a bare bundle ID, another type's suffix, a bare suffix and a case change.
    @Test(arguments: PushType.allCases.filter { $0.topicSuffix != nil })
    func rejectsWrongSuffix(type: PushType) throws {
        let suffix = try #require(type.topicSuffix)
        let wrong = ["com.example.app", suffix, "com.example.app" + suffix.uppercased(), "com.example.app" + suffix + ".x"]
        for topic in wrong {
            #expect(PushRequestValidator.bundleID(topic: topic, pushType: type, priority: 5).reason == .badTopic, "\(topic)")
        }
        for other in PushType.allCases where other != type {
            guard let otherSuffix = other.topicSuffix, !otherSuffix.hasSuffix(suffix) else { continue }
            #expect(
                PushRequestValidator.bundleID(topic: "com.example.app" + otherSuffix, pushType: type, priority: 5)
                    .reason == .badTopic, "\(other)")
        }
    }

    /// Alert and background take the bare bundle ID and reject any push-type suffix.
    @Test(arguments: [PushType.alert, .background])
    func alertAndBackgroundRejectSuffixes(type: PushType) {
        #expect(PushRequestValidator.bundleID(topic: "com.example.app", pushType: type, priority: 5).value
            == "com.example.app")
        for other in PushType.allCases {
            guard let suffix = other.topicSuffix else { continue }
            #expect(PushRequestValidator.bundleID(topic: "com.example.app" + suffix, pushType: type, priority: 5)
                .reason == .badTopic, "\(other)")
        }
    }

    /// MDM topics are returned unchanged, whatever they end with.
    @Test func mdmTopicIsUnchanged() {
        let topic = "com.apple.mgmt.External.6f4f0bd8-0000-4000-8000-000000000000"
        #expect(PushRequestValidator.bundleID(topic: topic, pushType: .mdm, priority: 10).value == topic)
        #expect(PushRequestValidator.bundleID(topic: "x.voip", pushType: .mdm, priority: 10).value == "x.voip")
    }

    /// Without a push type, a known suffix is removed and any other topic is the bundle ID.
    @Test func absentTypeStripsKnownSuffix() {
        #expect(PushRequestValidator.bundleID(topic: "com.example.app.voip", pushType: nil, priority: 10).value
            == "com.example.app")
        #expect(PushRequestValidator.bundleID(topic: "com.example.app.voip-ptt", pushType: nil, priority: 10).value
            == "com.example.app")
        #expect(PushRequestValidator.bundleID(topic: "com.example.app", pushType: nil, priority: 10).value
            == "com.example.app")
        #expect(PushRequestValidator.bundleID(topic: ".voip", pushType: nil, priority: 10).value == ".voip")
    }

    /// An empty topic is BadTopic for every type.
    @Test(arguments: [nil] + PushType.allCases.map(Optional.some))
    func rejectsEmptyTopic(type: PushType?) {
        #expect(PushRequestValidator.bundleID(topic: "", pushType: type, priority: 5).reason == .badTopic)
    }

    /// Background with priority 10 is BadPriority; 5 and 1 are fine.
    @Test func backgroundRejectsPriorityTen() {
        #expect(PushRequestValidator.bundleID(topic: "a.b", pushType: .background, priority: 10).reason == .badPriority)
        #expect(PushRequestValidator.bundleID(topic: "a.b", pushType: .background, priority: 5).value == "a.b")
        #expect(PushRequestValidator.bundleID(topic: "a.b", pushType: .background, priority: 1).value == "a.b")
    }

    /// Live Activities accept priority 5 and 10 but not 1.
    @Test func liveActivityRejectsPriorityOne() {
        let topic = "a.b.push-type.liveactivity"
        #expect(PushRequestValidator.bundleID(topic: topic, pushType: .liveactivity, priority: 1).reason == .badPriority)
        #expect(PushRequestValidator.bundleID(topic: topic, pushType: .liveactivity, priority: 5).value == "a.b")
        #expect(PushRequestValidator.bundleID(topic: topic, pushType: .liveactivity, priority: 10).value == "a.b")
    }

    /// Priorities other than 1, 5 and 10 are BadPriority, checked before the topic.
    @Test(arguments: [0, 2, 4, 6, 9, 11, -1, Int.max])
    func rejectsUnknownPriority(priority: Int) {
        #expect(PushRequestValidator.bundleID(topic: "", pushType: .alert, priority: priority).reason == .badPriority)
    }
}
