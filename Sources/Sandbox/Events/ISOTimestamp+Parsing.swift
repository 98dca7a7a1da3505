// APNs Sandbox — reading an RFC 3339 / ISO 8601 instant, the inverse of ISOTimestamp.string(milliseconds:).
import Support

extension ISOTimestamp {
    /// Milliseconds since the epoch of `text` in RFC 3339's form: `2026-01-01T00:00:00Z`, with an optional
    /// fraction of a second (up to 9 digits; beyond milliseconds it is cut off) and `Z` or an offset
    /// (`+02:00`); `T` and `Z` may be lower case. Nil for anything else, including impossible dates.
    public static func milliseconds(parsing text: String) -> Int64? {
        var bytes = Array(text.utf8)[...]
        func number(_ digits: Int) -> Int? {
            guard bytes.count >= digits else { return nil }
            var value = 0
            for byte in bytes.prefix(digits) {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            bytes.removeFirst(digits)
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard let byte = bytes.first, characters.utf8.contains(byte) else { return false }
            bytes.removeFirst()
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2),
            let seconds = UTCDateTime.secondsSince1970(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        var milliseconds = 0
        if expect(".") {
            var digits = 0
            while let byte = bytes.first, (0x30...0x39).contains(byte) {
                if digits < 3 { milliseconds = milliseconds * 10 + Int(byte - 0x30) }
                digits += 1
                bytes.removeFirst()
            }
            guard (1...9).contains(digits) else { return nil }
            for _ in 0..<max(0, 3 - digits) { milliseconds *= 10 }
        }
        var offsetSeconds = 0
        if !expect("Zz") {
            guard let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
            bytes.removeFirst()
            guard let hours = number(2), expect(":"), let minutes = number(2), hours <= 23, minutes <= 59 else {
                return nil
            }
            offsetSeconds = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "+") ? 1 : -1)
        }
        guard bytes.isEmpty else { return nil }
        return (seconds - Int64(offsetSeconds)) * 1000 + Int64(milliseconds)
    }
}
