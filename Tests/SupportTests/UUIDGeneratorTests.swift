// APNs Sandbox — apns-id generation and validation.
import Foundation
import Support
import Testing

@Suite struct UUIDGeneratorTests {
    /// Generated ids are canonical lowercase version-4 UUIDs and do not repeat.
    @Test func generatesUniqueCanonicalVersion4IDs() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = UUIDGenerator.make()
            #expect(UUIDGenerator.isCanonical(id))
            #expect(id == id.lowercased())
            let bytes = Array(id.utf8)
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(bytes[19]))
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    /// Time-ordered ids are canonical version-7 UUIDs that carry their millisecond, sort by it, and do not repeat.
    @Test func generatesTimeOrderedVersion7IDs() {
        let start: Int64 = 1_764_460_800_000  // 2025-11-30T00:00:00Z
        var seen = Set<String>()
        var previous = ""
        for step in 0..<10_000 {
            let milliseconds = start + Int64(step / 10)
            let id = UUIDGenerator.makeTimeOrdered(unixMilliseconds: milliseconds)
            #expect(UUIDGenerator.isCanonical(id))
            #expect(id == id.lowercased())
            let bytes = Array(id.utf8)
            #expect(bytes[14] == UInt8(ascii: "7"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(bytes[19]))
            let hex = id.replacingOccurrences(of: "-", with: "")
            #expect(Int64(hex.prefix(12), radix: 16) == milliseconds)
            if step % 10 == 0 { #expect(id > previous) }  // a later millisecond sorts after every earlier id
            previous = max(previous, id)
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    /// Apple's 8-4-4-4-12 form is accepted in either case; anything else is not.
    @Test func validatesCanonicalForm() {
        #expect(UUIDGenerator.isCanonical("123e4567-e89b-12d3-a456-4266554400a0"))
        #expect(UUIDGenerator.isCanonical("123E4567-E89B-12D3-A456-4266554400A0"))
        #expect(!UUIDGenerator.isCanonical("123e4567e89b12d3a4564266554400a0"))
        #expect(!UUIDGenerator.isCanonical("123e4567-e89b-12d3-a456-4266554400a"))
        #expect(!UUIDGenerator.isCanonical("123e4567-e89b-12d3-a456-4266554400ag"))
        #expect(!UUIDGenerator.isCanonical("{123e4567-e89b-12d3-a456-4266554400a0}"))
        #expect(!UUIDGenerator.isCanonical(""))
    }
}
