// APNs Sandbox — push types, topic suffixes and payload limits.
import APNsProtocol
import Testing

@Suite struct PushTypeTests {
    /// All 11 header values exist with the documented topic suffixes.
    @Test func suffixesMatchTheReference() {
        let expected: [PushType: String?] = [
            .alert: nil, .background: nil, .complication: ".complication", .controls: ".push-type.controls",
            .fileprovider: ".pushkit.fileprovider", .liveactivity: ".push-type.liveactivity",
            .location: ".location-query", .mdm: nil, .pushtotalk: ".voip-ptt", .voip: ".voip",
            .widgets: ".push-type.widgets",
        ]
        #expect(PushType.allCases.count == 11)
        for type in PushType.allCases {
            #expect(type.topicSuffix == expected[type] ?? nil, "\(type)")
        }
        #expect(Set(PushType.allCases.map(\.rawValue)) == [
            "alert", "background", "complication", "controls", "fileprovider", "liveactivity", "location", "mdm",
            "pushtotalk", "voip", "widgets",
        ])
    }

    /// VoIP allows 5120 bytes, every other type 4096; only location requires token auth.
    @Test func limitsAndAuth() {
        for type in PushType.allCases {
            #expect(type.maxPayloadBytes == (type == .voip ? 5120 : 4096))
            #expect(type.requiresTokenAuth == (type == .location))
        }
    }
}
