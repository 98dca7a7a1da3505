// APNs Sandbox — JSONWriter: members, escaping, and round trips through Foundation's parser.
import APNsProtocol
import Foundation
import Support
import Testing

@Suite struct JSONWriterTests {
    private func written(_ value: String) -> String {
        var bytes: [UInt8] = []
        JSONString.append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Plain strings are copied as they are; quotes, backslashes and control characters are escaped.
    @Test func escapesOnlyWhatJSONRequires() {
        #expect(written("com.example.app") == #""com.example.app""#)
        #expect(written("") == #""""#)
        #expect(written("«Grüße» 🎉 / é") == "\"«Grüße» 🎉 / é\"")
        #expect(written(#"say "hi""#) == #""say \"hi\"""#)
        #expect(written(#"C:\path"#) == #""C:\\path""#)
        #expect(written("a\nb\r\tc\u{1}") == #""a\nb\r\tc\u0001""#)
    }

    /// Whatever the string, the written object parses back to the same values.
    @Test func roundTripsThroughFoundation() throws {
        let values = ["plain", "«ünïcödé» 🎉", "quote \" and \\ backslash", "controls \u{0}\u{7}\u{1F}\n", String(repeating: "x", count: 5000)]
        var writer = JSONWriter()
        for (index, value) in values.enumerated() { writer.member("k\(index)", value) }
        writer.member("n", Int64(-42))
        writer.member("missing", nil as String?)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(writer.finish())) as? [String: Any])
        for (index, value) in values.enumerated() { #expect(object["k\(index)"] as? String == value) }
        #expect(object["n"] as? Int == -42)
        #expect(object["missing"] == nil)
        #expect(object.count == values.count + 1)
    }
}
