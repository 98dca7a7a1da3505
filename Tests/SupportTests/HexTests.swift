// APNs Sandbox — Hex: bytes as lowercase hex digits.
import Support
import Testing

@Suite struct HexTests {
    /// Two lowercase digits per byte, leading zeros kept; nothing for no bytes.
    @Test func encodesEveryByte() {
        #expect(Hex.encode([]) == "")
        #expect(Hex.encode([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.encode(all) == all.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
    }
}
