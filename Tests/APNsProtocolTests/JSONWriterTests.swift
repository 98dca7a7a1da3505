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

    /// U+2028 and U+2029 are escaped only when asked (SSE lines), and a string that is not contiguous in memory
    /// (a bridged or lazily built one) is written as a native one is.
    @Test func escapesLineSeparatorsWhenAsked() {
        var bytes: [UInt8] = []
        JSONString.append("a\u{2028}b\u{2029}c€", to: &bytes, escapingLineSeparators: true)
        #expect(String(decoding: bytes, as: UTF8.self) == #""a\u2028b\u2029c€""#)
        #expect(written("a\u{2028}b") == "\"a\u{2028}b\"")
        let lazy = String(decoding: Array("x\"y".utf8).lazy.map { $0 }, as: UTF8.self)
        #expect(written(lazy) == #""x\"y""#)
    }

    /// A nested object, JSON text from a string and a string of four parts, written in place, parse back.
    @Test func writesNestedObjectsTextAndJoinedStrings() throws {
        var writer = JSONWriter()
        writer.member("a", 1)
        writer.member("payload", jsonText: #"{"aps":{"alert":"hi"}}"#)
        writer.member("empty", jsonText: "")
        writer.member("timings") { timings in
            timings.member("at", Int64(5))
            timings.member("inner") { $0.member("q", "\"") }
        }
        writer.member("href", joining: ("/n/", "id\"1", "?device=", "tok"))
        let text = String(decoding: writer.finish(), as: UTF8.self)
        #expect(text == #"{"a":1,"payload":{"aps":{"alert":"hi"}},"timings":{"at":5,"inner":{"q":"\""}},"href":"/n/id\"1?device=tok"}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["href"] as? String == "/n/id\"1?device=tok")
    }
}
