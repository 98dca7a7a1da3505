// APNs Sandbox — device token parsing.
import APNsProtocol
import Testing

@Suite struct DeviceTokenTests {
    /// A 64-digit token parses, keeps its hex and yields 32 bytes.
    @Test func parsesSixtyFourHexDigits() throws {
        let token = try #require(DeviceToken(hex: sampleTokenHex))
        #expect(token.hex == sampleTokenHex)
        #expect(token.bytes.count == 32)
        #expect(Array(token.bytes.prefix(8)) == [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF])
    }

    /// Upper-case hex is accepted, stored lowercase, and equal to the lowercase token.
    @Test func acceptsUppercaseAndLowercasesIt() throws {
        let upper = try #require(DeviceToken(hex: sampleTokenHex.uppercased()))
        #expect(upper.hex == sampleTokenHex)
        #expect(upper == DeviceToken(hex: sampleTokenHex))
        #expect(upper.hashValue == DeviceToken(hex: sampleTokenHex)?.hashValue)
    }

    /// Tokens from 16 to 200 bytes are accepted; the bounds are inclusive.
    @Test(arguments: [32, 64, 160, 400])
    func acceptsLengthsInRange(digits: Int) throws {
        let token = try #require(DeviceToken(hex: String(repeating: "a", count: digits)))
        #expect(token.bytes.count == digits / 2)
        #expect(token.bytes.allSatisfy { $0 == 0xAA })
    }

    private static let malformed: [String] = {
        let short = String(sampleTokenHex.dropLast())
        let tail = String(sampleTokenHex.dropFirst(2))
        return [
            "", short, short + "g", short + " ", String(repeating: "a", count: 30), String(repeating: "a", count: 402),
            "0x" + tail, String(sampleTokenHex.dropLast(2)) + "é", String(sampleTokenHex.dropLast(3)) + "%20",
        ]
    }()

    /// Empty, odd-length, non-hex, too short and too long tokens are rejected.
    @Test(arguments: malformed)
    func rejectsMalformedTokens(hex: String) {
        #expect(DeviceToken(hex: hex) == nil)
    }

    /// The description shows only a prefix, so logs never carry whole tokens.
    @Test func descriptionIsAPrefix() throws {
        let token = try #require(DeviceToken(hex: sampleTokenHex))
        #expect(token.description == "01234567…")
    }
}
