// APNs Sandbox — UTC calendar arithmetic and JSON string literals, checked against known values and glibc.
import Foundation
import Glibc
import Support
import Testing

@Suite struct UTCDateTimeTests {
    /// Known instants: the epoch, a leap day, the turn of a century that is not leap, before 1970, far ahead.
    @Test func knownInstants() {
        func parts(_ seconds: Int64) -> [Int] {
            let time = UTCDateTime(secondsSince1970: seconds)
            return [time.year, time.month, time.day, time.hour, time.minute, time.second, time.weekday]
        }
        #expect(parts(0) == [1970, 1, 1, 0, 0, 0, 4])
        #expect(parts(951_782_400) == [2000, 2, 29, 0, 0, 0, 2])
        #expect(parts(4_107_542_399) == [2100, 2, 28, 23, 59, 59, 0])
        #expect(parts(4_107_542_400) == [2100, 3, 1, 0, 0, 0, 1])
        #expect(parts(-1) == [1969, 12, 31, 23, 59, 59, 3])
        #expect(parts(784_111_777) == [1994, 11, 6, 8, 49, 37, 0])  // RFC 9110's example date
    }

    /// Every ~9 days over 400 years (a whole Gregorian cycle) agrees with glibc's gmtime_r.
    @Test func agreesWithGmtime() {
        var seconds: Int64 = -6_311_433_600  // 1770-01-01
        while seconds < 6_311_433_600 {
            var value = time_t(seconds)
            var expected = tm()
            gmtime_r(&value, &expected)
            let time = UTCDateTime(secondsSince1970: seconds)
            #expect(time.year == Int(expected.tm_year) + 1900 && time.month == Int(expected.tm_mon) + 1
                && time.day == Int(expected.tm_mday) && time.hour == Int(expected.tm_hour)
                && time.minute == Int(expected.tm_min) && time.second == Int(expected.tm_sec)
                && time.weekday == Int(expected.tm_wday), "\(seconds)")
            seconds += 777_777
        }
    }
}

@Suite struct UTCDateTimeInverseTests {
    /// `secondsSince1970(year:…)` undoes `init(secondsSince1970:)` (before 1970 too) and refuses impossible dates.
    @Test func roundTripsAndRefusesImpossibleDates() {
        var seconds: Int64 = -2_208_988_800  // 1900-01-01
        while seconds < 7_258_118_400 {  // 2200-01-01
            let time = UTCDateTime(secondsSince1970: seconds)
            #expect(UTCDateTime.secondsSince1970(
                year: time.year, month: time.month, day: time.day, hour: time.hour, minute: time.minute,
                second: time.second) == seconds)
            seconds += 7_777_777
        }
        #expect(UTCDateTime.secondsSince1970(year: 2024, month: 2, day: 29) == 1_709_164_800)
        #expect(UTCDateTime.secondsSince1970(year: 2023, month: 2, day: 29) == nil)
        #expect(UTCDateTime.secondsSince1970(year: 2100, month: 2, day: 29) == nil)
        #expect(UTCDateTime.secondsSince1970(year: 2026, month: 13, day: 1) == nil)
        #expect(UTCDateTime.secondsSince1970(year: 2026, month: 1, day: 1, hour: 24) == nil)
        #expect(UTCDateTime.secondsSince1970(year: 2026, month: 1, day: 1, second: 60) == nil)
    }
}

@Suite struct JSONStringTests {
    /// Only quotes, backslashes and control characters are escaped; the result parses back to the input.
    @Test func escapesWhatJSONRequires() throws {
        #expect(JSONString.quoted("com.example.app") == #""com.example.app""#)
        #expect(JSONString.quoted(#"a "b" \c"#) == #""a \"b\" \\c""#)
        #expect(JSONString.quoted("x\ny\r\t\u{1}\u{1F}") == #""x\ny\r\t\u0001\u001f""#)
        #expect(JSONString.quoted("é🎉\u{2028}") == "\"é🎉\u{2028}\"")
        for text in ["", "plain", "\"\\\u{0}\u{7F}é🎉", String(repeating: "ab\"", count: 1000)] {
            let parsed = try JSONSerialization.jsonObject(with: Data(JSONString.quoted(text).utf8), options: .fragmentsAllowed)
            #expect(parsed as? String == text)
        }
    }
}
