// APNs Sandbox — reading a nested JSON document field by field, with errors that name the field's path.
import APNsProtocol

/// A JSON object of a document read field by field: typed getters whose errors name the path
/// (`devices[2].token`), and unknown members refused. For API documents nested deeper than a flat body
/// (``APIBody/decode(_:from:allowEmpty:)`` checks only the top level): a snapshot and its sections.
///
/// A member that is `null` reads as absent. Errors are ``SnapshotSectionError``s.
struct JSONObjectReader {
    /// Where this object is in the document (empty for the root).
    let path: String
    private let members: [(String, JSON)]

    init(_ value: JSON, path: String) throws {
        guard let members = value.members else { throw SnapshotSectionError(path: path, "must be a JSON object") }
        self.members = members
        self.path = path
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func error(_ key: String?, _ message: String) -> SnapshotSectionError {
        SnapshotSectionError(path: key.map(keyPath) ?? path, message)
    }

    /// Throws for the first member not in `allowed`, naming it and the known ones.
    func rejectUnknownKeys(allowed: [String]) throws {
        var seen = Set<String>()
        for (key, _) in members {
            guard allowed.contains(key) else {
                throw error(key, "unknown field (known here: \(allowed.joined(separator: ", ")))")
            }
            guard seen.insert(key).inserted else { throw error(key, "given twice") }
        }
    }

    /// The member's value; nil when it is absent or `null`.
    func value(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.0 == key })?.1, value != .null else { return nil }
        return value
    }

    func required(_ key: String) throws -> JSON {
        guard let value = value(key) else { throw error(key, "is required") }
        return value
    }

    func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.string else { throw error(key, "must be a string") }
        return text
    }

    func requiredString(_ key: String) throws -> String {
        guard let text = try string(key) else { throw error(key, "is required") }
        return text
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.bool else { throw error(key, "must be true or false") }
        return flag
    }

    /// A whole number within `range`.
    func int64(_ key: String, in range: ClosedRange<Int64> = Int64.min...Int64.max) throws -> Int64? {
        guard let value = value(key) else { return nil }
        guard case .number(let text) = value, let number = Int64(text) ?? value.int.map(Int64.init) else {
            throw error(key, "must be a whole number")
        }
        guard range.contains(number) else {
            throw error(key, "must be between \(range.lowerBound) and \(range.upperBound), not \(number)")
        }
        return number
    }

    func requiredInt64(_ key: String, in range: ClosedRange<Int64> = Int64.min...Int64.max) throws -> Int64 {
        guard let number = try int64(key, in: range) else { throw error(key, "is required") }
        return number
    }

    func double(_ key: String) throws -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.double, number.isFinite else { throw error(key, "must be a number") }
        return number
    }

    func object(_ key: String) throws -> JSONObjectReader? {
        guard let value = value(key) else { return nil }
        return try JSONObjectReader(value, path: keyPath(key))
    }

    /// The items of an array member with their paths (`devices[2]`).
    func array(_ key: String) throws -> [(path: String, value: JSON)]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw error(key, "must be an array") }
        return items.enumerated().map { ("\(keyPath(key))[\($0.offset)]", $0.element) }
    }

    /// An array of objects.
    func objects(_ key: String) throws -> [JSONObjectReader]? {
        try array(key)?.map { try JSONObjectReader($0.value, path: $0.path) }
    }

    /// An array of strings.
    func strings(_ key: String) throws -> [String]? {
        try array(key)?.map { item in
            guard let text = item.value.string else { throw SnapshotSectionError(path: item.path, "must be a string") }
            return text
        }
    }

    /// An object whose members are all strings.
    func stringMap(_ key: String) throws -> [String: String]? {
        guard let object = try object(key) else { return nil }
        var map: [String: String] = [:]
        for (name, value) in object.members {
            guard let text = value.string else { throw object.error(name, "must be a string") }
            map[name] = text
        }
        return map
    }

    /// The members, in order.
    var allMembers: [(String, JSON)] { members }
}
