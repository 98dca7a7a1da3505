// APNs Sandbox — percent-encoding of one path segment or query value.
import Support
import Testing

@Suite struct PercentEncodingTests {
    /// Only RFC 3986's unreserved ASCII characters pass; every other byte (reserved characters, spaces,
    /// non-ASCII letters as their UTF-8 bytes) becomes `%XX` with upper-case hex digits.
    @Test(arguments: [
        ("abcXYZ019-._~", "abcXYZ019-._~"), ("a b", "a%20b"), ("a/b?c=d&e#f", "a%2Fb%3Fc%3Dd%26e%23f"),
        ("é", "%C3%A9"), ("push.accepted,notification.displayed", "push.accepted%2Cnotification.displayed"),
        ("%", "%25"), ("", ""),
    ])
    func encodesAllButUnreserved(plain: String, encoded: String) {
        #expect(PercentEncoding.segment(plain) == encoded)
    }
}
