// APNs Sandbox — base64url encoding and decoding.
import Support
import Testing

@Suite struct Base64URLTests {
    /// RFC 4648 test vectors encode without padding and decode with or without it.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func roundTripsRFCVectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(Substring(encoded)) == Array(plain.utf8))
        let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
        #expect(Base64URL.decode(Substring(padded)) == Array(plain.utf8))
    }

    /// The URL-safe alphabet is used for bytes 62 and 63.
    @Test func usesURLSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        let all = (0...255).map { UInt8($0) }
        #expect(Base64URL.decode(Substring(Base64URL.encode(all))) == all)
    }

    /// Standard-alphabet characters, bad lengths, misplaced padding and stray bits are rejected.
    @Test(arguments: ["+/+/", "Zg=", "Z", "Zm9vY", "Zg===", "=Zg=", "Zm 9v", "Zm9v\n", "Zh", "Zm9=", "Zg==Zg==", "é"])
    func rejectsInvalidText(text: String) {
        #expect(Base64URL.decode(Substring(text)) == nil)
    }
}
