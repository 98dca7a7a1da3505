// APNs Sandbox — tests for HMAC-SHA256 and SHA-256 against published vectors.
import Testing

@testable import Crypto

@Suite struct HMACTests {
    /// RFC 4231 test case 2: a short key.
    @Test func rfc4231TestCase2() {
        let code = HMACSHA256.authenticationCode(key: Array("Jefe".utf8),
                                                 message: Array("what do ya want for nothing?".utf8))
        #expect(hex(code) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// RFC 4231 test cases 1 and 6: a 20-byte key, and a 131-byte key that is hashed first.
    @Test func rfc4231TestCases1And6() {
        #expect(hex(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0B, count: 20), message: Array("Hi There".utf8)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(hex(HMACSHA256.authenticationCode(
            key: [UInt8](repeating: 0xAA, count: 131),
            message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(HMACSHA256.authenticationCode(key: [], message: []).count == 32)
    }

    /// FIPS 180-2 "abc" and the empty message.
    @Test func sha256Vectors() {
        #expect(hex(SHA256Digest.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(SHA256Digest.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
