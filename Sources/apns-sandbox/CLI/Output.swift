// APNs Sandbox — what commands print: JSON for scripts, aligned columns for people.
import Foundation

enum Output {
    /// A JSON answer as the server sent it (with a final newline).
    static func json(_ body: [UInt8]) {
        var text = String(decoding: body, as: UTF8.self)
        if !text.hasSuffix("\n") { text += "\n" }
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// A JSON value made here, pretty-printed with sorted keys.
    static func json(_ value: Any) throws {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// Rows under a header, each column as wide as its widest cell.
    static func table(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        for row in all {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// `name  value` lines, the names aligned; nil values are left out.
    static func fields(_ pairs: [(String, String?)]) {
        let present = pairs.compactMap { pair in pair.1.map { (pair.0, $0) } }
        let width = present.map(\.0.count).max() ?? 0
        for (name, value) in present {
            print(name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + value)
        }
    }

    /// A JSON scalar as text ("" for null).
    static func text(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: ""
        case let string as String: string
        // JSON's true and false are NSNumbers of type "c" (char) here; a 1 or 0 is not.
        case let number as NSNumber where String(cString: number.objCType) == "c": number.boolValue ? "yes" : "no"
        case let number as NSNumber: number.stringValue
        case let other?:
            (try? JSONSerialization.data(withJSONObject: other, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "\(other)"
        }
    }
}
