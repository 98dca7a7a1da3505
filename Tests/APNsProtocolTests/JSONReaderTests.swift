// APNs Sandbox — the strict JSON reader behind payload and JWT parsing.
import Foundation
import Testing

@testable import APNsProtocol
import Sandbox

@Suite struct JSONReaderTests {
    /// Reads `json` as a document and returns each top-level member's scalar, or nil when it is rejected.
    private func members(_ json: String) -> [String: JSONReader.Scalar]? {
        members(Array(json.utf8))
    }

    private func members(_ bytes: [UInt8]) -> [String: JSONReader.Scalar]? {
        var reader = JSONReader(bytes)
        var result: [String: JSONReader.Scalar] = [:]
        do {
            try reader.readDocument { reader, key in result[key] = try reader.readScalar() }
        } catch {
            return nil
        }
        return result
    }

    /// Scalars decode: strings with every escape, integers at the Int64 limits, other numbers, literals.
    @Test func decodesScalars() throws {
        let result = try #require(members(#"""
            {"s":"a\"\\\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00€","i":-9223372036854775808,"j":9223372036854775807,
             "k":9223372036854775808,"z":-0,"f":1.5,"e":-2E+3,"t":true,"n":null,"o":{"a":[]},"a":[1,"x",{}],"": false}
            """#))
        #expect(result["s"] == .string("a\"\\/\u{8}\u{C}\n\r\tAé😀€"))
        #expect(result["i"] == .integer(.min))
        #expect(result["j"] == .integer(.max))
        #expect(result["k"] == .number)
        #expect(result["z"] == .integer(0))
        #expect(result["f"] == .number)
        #expect(result["e"] == .number)
        #expect(result["t"] == .bool(true))
        #expect(result["n"] == .null)
        #expect(result["o"] == .object)
        #expect(result["a"] == .array)
        #expect(result[""] == .bool(false))
    }

    /// Inputs that break RFC 8259 are rejected, including ones JSONSerialization lets through.
    @Test(arguments: [
        "", " ", "{", "}", "{]", "[]", "\"x\"", "{} {}", "{,}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, #"{"a":[1,]}"#,
        #"{"a":[,1]}"#, #"{a:1}"#, #"{'a':1}"#, #"{"a":01}"#, #"{"a":-}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":1e}"#,
        #"{"a":+1}"#, #"{"a":0x10}"#, #"{"a":NaN}"#, #"{"a":Infinity}"#, #"{"a":tru}"#, #"{"a":nul}"#, #"{"a":True}"#,
        #"{"a":"\u12"}"#, #"{"a":"\uD800"}"#, #"{"a":"\uDC00"}"#, #"{"a":"\uD800\u0041"}"#, #"{"a":"\a"}"#,
        "{\"a\":\"\t\"}", "{\"a\":\"\n\"}", "\u{FEFF}{}", "{\"a\":1}\u{0}", #"{"a":1 "b":2}"#, #"{"a" 1}"#,
        "{\u{A0}}", #"{"a":"x"#,
    ])
    func rejectsInvalidJSON(json: String) {
        #expect(members(json) == nil, "\(json.debugDescription)")
    }

    /// Malformed UTF-8 (stray continuation, overlong, surrogate, truncated, beyond U+10FFFF) is rejected.
    @Test(arguments: [
        [0x80], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF0, 0x80, 0x80, 0xAF],
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xE2, 0x28, 0xA1],
    ] as [[UInt8]])
    func rejectsMalformedUTF8(sequence: [UInt8]) {
        let body = Array(#"{"a":""#.utf8) + sequence + Array(#""}"#.utf8)
        #expect(members(body) == nil)
    }

    /// Well-formed multi-byte UTF-8 at the edges of each range is accepted verbatim.
    @Test func acceptsWellFormedUTF8() {
        let text = "\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFF}\u{10000}\u{10FFFF}"
        #expect(members(#"{"a":"\#(text)"}"#)?["a"] == .string(text))
    }

    /// Nesting is limited to maxDepth levels.
    @Test func limitsDepth() {
        let depth = JSONReader.maxDepth
        let ok = "{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
        #expect(members(ok) != nil)
        let deep = "{\"a\":" + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
        #expect(members(deep) == nil)
        let bomb = "{\"a\":" + String(repeating: "[", count: 100_000)
        #expect(members(bomb) == nil)
    }

    /// On valid documents and random corruptions of them, acceptance agrees with JSONSerialization,
    /// except that only JSONSerialization takes trailing commas and only we take numbers beyond Double.
    @Test func agreesWithJSONSerialization() throws {
        let seeds = [
            #"{"aps":{"alert":{"title":"T","body":"B \u00e9"},"badge":1,"sound":"default"},"k":[1,2.5,-3e2,true,null]}"#,
            #"{"aps":{"content-available":1},"data":{"nested":[{"a":"b"},[],{}],"s":"\"\\\/\n"}}"#,
            #"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":1700000000}"#, "{}", #"{"€":"😀"}"#,
        ]
        var random = SeededGenerator(seed: 0x5EED)
        let alphabet = Array(#"{}[],:"\ -.0123456789eEtrufalsn/u"#.utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF]
        var checked = 0
        for seed in seeds {
            let original = Array(seed.utf8)
            for round in 0..<1500 {
                var bytes = original
                if round > 0 {
                    for _ in 0..<(1 + Int(random.next() % 3)) {
                        let position = Int(random.next() % UInt64(bytes.count + 1))
                        let replacement = alphabet[Int(random.next() % UInt64(alphabet.count))]
                        switch random.next() % 3 {
                        case 0 where position < bytes.count: bytes[position] = replacement
                        case 1 where position < bytes.count: bytes.remove(at: position)
                        default: bytes.insert(replacement, at: position)
                        }
                    }
                }
                let ours = members(bytes) != nil
                let foundation = (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
                if ours != foundation {
                    // Accepted disagreements: Foundation takes trailing commas, which RFC 8259 forbids, and
                    // refuses numbers beyond Double's range, which the grammar allows (we never need their value).
                    let text = String(decoding: bytes, as: UTF8.self)
                    let trailingComma = text.contains(",}") || text.contains(",]") || text.contains(", }")
                        || text.contains(", ]") || text.contains(",\n}") || text.contains(",\n]")
                    let numbers = text.split { !"0123456789.eE+-".contains($0) }
                    let hugeNumber = numbers.contains { Double($0)?.isInfinite == true }
                    #expect(
                        ours ? hugeNumber : trailingComma,
                        "\(text.debugDescription): ours \(ours), Foundation \(foundation)")
                }
                checked += 1
            }
        }
        #expect(checked == seeds.count * 1500)
    }
}
