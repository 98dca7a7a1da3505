// APNs Sandbox — fast random UUIDs (apns-id) and canonical-UUID checks.
import Glibc

/// Random (version 4) and time-ordered (version 7) UUIDs as lowercase canonical strings, fast enough
/// for the push hot path.
///
/// Foundation's `UUID()` opens `/dev/urandom` and formats through `NSString` on Linux, which
/// costs more than the rest of a push. Here each thread keeps a xoshiro256** generator seeded
/// once from `getrandom(2)`; the output is not for secrets, only for unique ids.
public enum UUIDGenerator {
    /// A new random UUID such as `0c1f4a4e-9a7b-4c1d-8e2f-3a4b5c6d7e8f`.
    public static func make() -> String {
        let state = ThreadRandom.current
        var high = state.next()
        var low = state.next()
        high = (high & ~0xF000) | 0x4000  // version 4
        low = (low & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000  // RFC 4122 variant
        return format(high: high, low: low)
    }

    /// A new time-ordered (version 7, RFC 9562) UUID: the first 48 bits are `unixMilliseconds`, the
    /// rest random. Ids made later sort after earlier ones (within one millisecond in random order), so
    /// a B-tree index over them grows at its right edge instead of touching a random page per insert.
    public static func makeTimeOrdered(unixMilliseconds: Int64) -> String {
        let state = ThreadRandom.current
        let milliseconds = UInt64(clamping: max(0, unixMilliseconds)) & 0xFFFF_FFFF_FFFF
        let high = (milliseconds << 16) | 0x7000 | (state.next() & 0x0FFF)  // version 7, 12 random bits
        var low = state.next()
        low = (low & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000  // RFC 9562 variant
        return format(high: high, low: low)
    }

    static func format(high: UInt64, low: UInt64) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { buffer in
            digits.withUTF8Buffer { hex in
                var index = 0
                func put(_ value: UInt64, nibbles: Int) {
                    var shift = (nibbles - 1) * 4
                    while shift >= 0 {
                        buffer[index] = hex[Int((value >> UInt64(shift)) & 0xF)]
                        index += 1
                        shift -= 4
                    }
                }
                put(high >> 32, nibbles: 8)
                buffer[index] = UInt8(ascii: "-"); index += 1
                put((high >> 16) & 0xFFFF, nibbles: 4)
                buffer[index] = UInt8(ascii: "-"); index += 1
                put(high & 0xFFFF, nibbles: 4)
                buffer[index] = UInt8(ascii: "-"); index += 1
                put(low >> 48, nibbles: 4)
                buffer[index] = UInt8(ascii: "-"); index += 1
                put(low & 0xFFFF_FFFF_FFFF, nibbles: 12)
            }
            return 36
        }
    }

    /// True when `text` is a UUID in 8-4-4-4-12 hex form (either case).
    public static func isCanonical(_ text: String) -> Bool {
        guard text.utf8.count == 36 else { return false }
        for (i, byte) in text.utf8.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !isHex(byte) {
                return false
            }
        }
        return true
    }

    static func isHex(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }
}

/// A per-thread xoshiro256** generator.
final class ThreadRandom {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

    private init() {
        // Seeded once per thread from the system generator (getrandom).
        var system = SystemRandomNumberGenerator()
        s0 = system.next() | 1
        s1 = system.next()
        s2 = system.next()
        s3 = system.next()
    }

    func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3 << 45 | s3 >> 19
        return result
    }

    static var current: ThreadRandom {
        if let existing = pthread_getspecific(key) {
            return Unmanaged<ThreadRandom>.fromOpaque(existing).takeUnretainedValue()
        }
        let created = ThreadRandom()
        pthread_setspecific(key, Unmanaged.passRetained(created).toOpaque())
        return created
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<ThreadRandom>.fromOpaque(pointer).release()
        }
        return key
    }()
}
