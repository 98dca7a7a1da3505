// APNs Sandbox — the ordered JSON tree: parsing (through JSONReader), access, editing and serialization.
import APNsProtocol
import Foundation
import Support
import Testing

@Suite struct JSONTests {
    /// Member order, number text and escapes survive a parse and serialize round trip.
    @Test func roundTripKeepsOrderAndNumbers() throws {
        let text = #"{"z":1.50,"a":[true,false,null,-0.0,1e3],"s":"q\"\\\n\u00e9\ud83d\ude00","o":{}}"#
        let value = try JSON.parse(text)
        #expect(value.members?.map(\.0) == ["z", "a", "s", "o"])
        #expect(value["s"]?.string == "q\"\\\né😀")
        #expect(value.serialized == #"{"z":1.50,"a":[true,false,null,-0.0,1e3],"s":"q\"\\\né😀","o":{}}"#)
        #expect(try JSON.parse(value.serialized) == value)
    }

    /// Invalid documents are rejected.
    @Test func rejectsInvalidJSON() {
        for text in ["", "{", "{\"a\":}", "[1,]", "01", "\"\u{01}\"", "{\"a\":1}x", "nul", "\"\\ud800\"",
                     String(repeating: "[", count: 100) + String(repeating: "]", count: 100)] {
            #expect(throws: JSON.ParseError.self, "\(text)") { try JSON.parse(text) }
        }
    }

    /// A root object's members come with their text as received (escapes and number forms kept,
    /// white space around the colon dropped), duplicates included; a root that is not an object fails.
    @Test func rootMembersKeepTheirText() throws {
        let members = try JSON.rootMembers(of: Array(#" { "aps" : {"alert":"hi"}, "caf\u00e9":1.50 ,"aps":[] } "#.utf8))
        #expect(members.map(\.key) == ["aps", "café", "aps"])
        #expect(members.map(\.text) == [#""aps":{"alert":"hi"}"#, #""caf\u00e9":1.50"#, #""aps":[]"#])
        #expect(members[0].value["alert"]?.string == "hi")
        #expect(throws: JSON.ParseError.self) { try JSON.rootMembers(of: Array("[1]".utf8)) }
        #expect(throws: JSON.ParseError.self) { try JSON.rootMembers(of: Array(#"{"a":1} x"#.utf8)) }
    }

    /// A failure says where the input stopped being valid; a document the sandbox wrapped may nest deeper.
    @Test func failuresCarryTheirOffsetAndDepthCanBeRaised() throws {
        do {
            _ = try JSON.parse(#"{"a":x}"#)
            Issue.record("parsed")
        } catch let error as JSON.ParseError {
            #expect(error.offset == 5)
            #expect(error.description == "invalid JSON at byte 5")
        }
        let deeper = String(repeating: "[", count: JSON.maxDepth + 2) + String(repeating: "]", count: JSON.maxDepth + 2)
        #expect(throws: JSON.ParseError.self) { try JSON.parse(deeper) }
        #expect(throws: Never.self) { try JSON.parse(deeper, maxDepth: JSON.maxDepth + 8) }
    }

    /// Serialized text escapes U+2028 and U+2029 (it travels to extensions as one line); other text is UTF-8.
    @Test func serializedTextEscapesLineSeparators() throws {
        let value = JSON.object([("k\u{2029}", .string("a\u{2028}b é \u{2027}"))])
        #expect(value.serialized == #"{"k\u2029":"a\u2028b é "# + "\u{2027}" + #""}"#)
        #expect(try JSON.parse(value.serialized) == value)
        #expect(JSONString.quoted("a\u{2028}b") == "\"a\u{2028}b\"")
    }

    /// Nesting up to the reader's limit parses; one level more does not.
    @Test func nestingIsBounded() throws {
        let deepest = String(repeating: "[", count: JSON.maxDepth) + String(repeating: "]", count: JSON.maxDepth)
        #expect(throws: Never.self) { try JSON.parse(deepest) }
        #expect(throws: JSON.ParseError.self) { try JSON.parse("[" + deepest + "]") }
    }

    /// `set` replaces the first member of a name and drops its duplicates; nil removes.
    @Test func setReplacesAndRemoves() throws {
        var value = try JSON.parse(#"{"a":1,"b":2,"a":3}"#)
        value.set("a", .string("x"))
        #expect(value.serialized == #"{"a":"x","b":2}"#)
        value.set("b", nil)
        value.set("c", .null)
        #expect(value.serialized == #"{"a":"x","c":null}"#)
    }
}

@Suite struct JSONCodableTests {
    /// Inside Codable types: decoded objects are sorted by key, arrays and scalars kept; encoding writes
    /// members in order (the last of duplicates), whole numbers as integers.
    @Test func decodesAndEncodesThroughFoundation() throws {
        struct Box: Codable { var value: JSON }
        let decoded = try JSONDecoder().decode(
            Box.self, from: Data(#"{"value":{"b":[1,2.5,"x",true,null],"a":{"z":-3}}}"#.utf8))
        #expect(decoded.value.members?.map(\.0) == ["a", "b"])
        #expect(decoded.value["b"] == .array([.number(1), .number(2.5), .string("x"), .bool(true), .null]))
        #expect(decoded.value["a"]?["z"]?.int == -3)

        let written = try JSON.parse(#"{"k":1,"n":1.0,"d":2.5,"k":2,"big":12345678901234567}"#)
        let data = try JSONEncoder().encode(Box(value: written))
        let reread = try #require(try JSONSerialization.jsonObject(with: data) as? [String: [String: Any]])
        let object = try #require(reread["value"])
        #expect(object["k"] as? Int == 2)
        #expect(object["n"] as? Int == 1)
        #expect(object["d"] as? Double == 2.5)
        #expect(object["big"] as? Int == 12345678901234567)
        #expect(object.count == 4)

        // Beyond a double's range: the text, as a string, instead of failing the whole response.
        let huge = try JSON.parse(#"{"n":1e400,"m":-1e400}"#)
        let hugeData = try JSONEncoder().encode(Box(value: huge))
        let hugeObject = try #require(try JSONSerialization.jsonObject(with: hugeData) as? [String: [String: Any]])
        #expect(hugeObject["value"]?["n"] as? String == "1e400")
        #expect(hugeObject["value"]?["m"] as? String == "-1e400")
    }
}
