// APNs Sandbox — gzip through zlib and Accept-Encoding negotiation.

import Testing

@testable import HTTP

@Suite struct GzipTests {
    /// Compressed data starts with the gzip magic and decompresses to the original.
    @Test func roundTrips() throws {
        for input in [[], Array("hello".utf8), (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }] {
            let compressed = try Gzip.compress(input)
            #expect(compressed.prefix(2) == [0x1F, 0x8B])
            #expect(try Gzip.decompress(compressed) == input)
        }
    }

    /// Every level, including store-only, round-trips.
    @Test(arguments: [Int32(-1), 0, 1, 9])
    func roundTripsAtLevel(level: Int32) throws {
        let input = Array(String(repeating: "apns ", count: 5000).utf8)
        #expect(try Gzip.decompress(Gzip.compress(input, level: level)) == input)
    }

    /// An invalid level is an initialization error.
    @Test func rejectsInvalidLevel() {
        #expect(throws: CompressionError.self) { try Gzip.compress([1], level: 42) }
    }

    /// Concatenated gzip members decompress to the concatenation.
    @Test func decompressesConcatenatedMembers() throws {
        let joined = try Gzip.compress(Array("abc".utf8)) + Gzip.compress(Array("def".utf8))
        #expect(try Gzip.decompress(joined) == Array("abcdef".utf8))
    }

    /// A small input that inflates past `maxOutput` is refused (decompression bomb).
    @Test func refusesDecompressionBomb() throws {
        let bomb = try Gzip.compress([UInt8](repeating: 0, count: 10 << 20), level: 9)
        #expect(bomb.count < 20_000)
        let error = try #require(throws: CompressionError.self) { try Gzip.decompress(bomb, maxOutput: 1 << 20) }
        #expect(error.kind == .outputLimitExceeded)
        #expect(try Gzip.decompress(bomb, maxOutput: 10 << 20).count == 10 << 20)
    }

    /// Exactly `maxOutput` bytes is allowed, one more is not.
    @Test func allowsOutputExactlyAtLimit() throws {
        let compressed = try Gzip.compress([UInt8](repeating: 7, count: 1000))
        #expect(try Gzip.decompress(compressed, maxOutput: 1000).count == 1000)
        #expect(throws: CompressionError.self) { try Gzip.decompress(compressed, maxOutput: 999) }
    }

    /// Garbage and truncated streams are reported as such.
    @Test func rejectsCorruptAndTruncatedInput() throws {
        let corrupt = try #require(throws: CompressionError.self) { try Gzip.decompress(Array("not gzip at all".utf8)) }
        #expect(corrupt.kind == .corruptInput)
        let compressed = try Gzip.compress(Array(String(repeating: "truncate me ", count: 100).utf8))
        let truncated = try #require(throws: CompressionError.self) {
            try Gzip.decompress(Array(compressed.dropLast(10)))
        }
        #expect(truncated.kind == .truncatedInput)
        let empty = try #require(throws: CompressionError.self) { try Gzip.decompress([]) }
        #expect(empty.kind == .truncatedInput)
        let trailing = try #require(throws: CompressionError.self) { try Gzip.decompress(compressed + [1, 2, 3]) }
        #expect(trailing.kind == .corruptInput || trailing.kind == .truncatedInput)
    }

    /// Accept-Encoding values with q-values and wildcards are honoured.
    @Test(arguments: [
        ("gzip", true), ("GZIP", true), ("deflate, gzip;q=0.5", true), ("br;q=1.0, gzip; q=0.001", true),
        ("x-gzip", true), ("*", true), ("*;q=0.1", true), ("gzip;q=1", true), ("gzip;q=1.000", true),
        ("gzip;q=0", false), ("gzip;q=0.000", false), ("gzip;Q=0", false), ("*;q=0", false), ("deflate, br", false),
        ("gzip;q=0, *", false), ("*, gzip;q=0", false), ("identity", false), ("", false), ("gzip;q=2", false),
        ("gzip;q=abc", false), ("gzipx", false),
    ])
    func negotiatesGzip(header: String, expected: Bool) {
        #expect(Gzip.acceptsGzip(header) == expected)
    }

    /// No Accept-Encoding header means no compression.
    @Test func treatsMissingHeaderAsIdentity() {
        #expect(!Gzip.acceptsGzip(nil))
    }
}
