// APNs Sandbox — the ordered JSON tree: parsing (through JSONReader), access, editing and serialization.
import APNsProtocol
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
