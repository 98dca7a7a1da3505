// APNs Sandbox — a compact, length-prefixed binary format: the writer and the bounds-checked reader.

/// Appends values to a byte array.
///
/// Integers are LEB128 varints (signed ones zigzag-encoded first), strings are a varint byte count
/// followed by UTF-8, optionals are a presence byte (0 or 1) followed by the value, doubles are the
/// 8 bytes of their IEEE bit pattern, little-endian.
struct BinaryWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func write(byte: UInt8) {
        bytes.append(byte)
    }

    mutating func write(unsigned value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func write(signed value: Int64) {
        write(unsigned: UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func write(_ value: Int) {
        write(signed: Int64(value))
    }

    /// One byte, 0 or 1.
    mutating func write(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    mutating func write(_ value: Double) {
        var bits = value.bitPattern
        for _ in 0..<8 {
            bytes.append(UInt8(truncatingIfNeeded: bits))
            bits >>= 8
        }
    }

    mutating func write(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            write(unsigned: UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func write(_ value: String?) {
        guard let value else { return bytes.append(0) }
        bytes.append(1)
        write(value)
    }

    mutating func write(_ value: Int?) {
        guard let value else { return bytes.append(0) }
        bytes.append(1)
        write(value)
    }

    mutating func write(signed value: Int64?) {
        guard let value else { return bytes.append(0) }
        bytes.append(1)
        write(signed: value)
    }

    mutating func write(_ value: Double?) {
        guard let value else { return bytes.append(0) }
        bytes.append(1)
        write(value)
    }
}

/// Reads what ``BinaryWriter`` wrote, checking every length against the bytes left.
///
/// Any inconsistency (truncation, an over-long varint, invalid UTF-8, a bad presence byte)
/// throws ``StoreError/Code/corruptRecord``; the reader never traps on bad input.
struct BinaryReader {
    private let buffer: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    var remaining: Int { buffer.count - offset }
    var isAtEnd: Bool { offset == buffer.count }

    mutating func readByte() throws -> UInt8 {
        guard offset < buffer.count else { throw StoreError.corruptRecord("record truncated at byte \(offset)") }
        let byte = buffer[offset]
        offset += 1
        return byte
    }

    mutating func readUnsigned() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            // The 10th byte may only carry the top bit of a 64-bit value.
            guard shift < 63 || (shift == 63 && byte <= 1) else {
                throw StoreError.corruptRecord("varint too long at byte \(offset)")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    mutating func readSigned() throws -> Int64 {
        let raw = try readUnsigned()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    mutating func readInt() throws -> Int {
        let value = try readSigned()
        guard let int = Int(exactly: value) else { throw StoreError.corruptRecord("integer out of range") }
        return int
    }

    mutating func readDouble() throws -> Double {
        guard remaining >= 8 else { throw StoreError.corruptRecord("record truncated at byte \(offset)") }
        var bits: UInt64 = 0
        for index in 0..<8 {
            bits |= UInt64(buffer[offset + index]) << (8 * UInt64(index))
        }
        offset += 8
        return Double(bitPattern: bits)
    }

    /// A count of following elements, each at least `minimumElementSize` bytes long (so a corrupt
    /// count can never make the caller reserve more memory than the record holds).
    mutating func readCount(minimumElementSize: Int = 1) throws -> Int {
        let count = try readUnsigned()
        guard count <= UInt64(remaining / max(minimumElementSize, 1)) else {
            throw StoreError.corruptRecord("count \(count) exceeds the record at byte \(offset)")
        }
        return Int(count)
    }

    mutating func readString() throws -> String {
        let count = try readCount()
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
        offset += count
        let utf8 = bytes.assumingMemoryBound(to: UInt8.self)
        // ASCII (tokens, ids, bundle IDs, most JSON) needs no validation, and the generic validating initializer
        // costs a metadata lookup a call: 12 % of loading a million devices.
        if utf8.allSatisfy({ $0 < 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw StoreError.corruptRecord("invalid UTF-8 at byte \(offset - count)")
        }
        return string
    }

    /// Reads a byte that must be 0 (false) or 1 (true): a Bool, or a presence byte.
    mutating func readBool() throws -> Bool {
        switch try readByte() {
        case 0: return false
        case 1: return true
        case let other: throw StoreError.corruptRecord("byte \(other) at byte \(offset - 1) is neither 0 nor 1")
        }
    }

    /// Reads a presence byte: true when a value follows.
    mutating func readPresence() throws -> Bool {
        try readBool()
    }

    mutating func readOptionalString() throws -> String? {
        try readPresence() ? try readString() : nil
    }

    mutating func readOptionalInt() throws -> Int? {
        try readPresence() ? try readInt() : nil
    }

    mutating func readOptionalSigned() throws -> Int64? {
        try readPresence() ? try readSigned() : nil
    }

    mutating func readOptionalDouble() throws -> Double? {
        try readPresence() ? try readDouble() : nil
    }
}
