// APNs Sandbox — header fields shared by HTTP/1.1 and HTTP/2.

/// An ordered list of header fields. Names are stored lowercased (HTTP/2 requires it and
/// HTTP/1.1 names are case-insensitive); lookups are case-insensitive.
public struct HTTPFields: Sendable, Sequence, ExpressibleByDictionaryLiteral, Equatable {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public private(set) var fields: [Field] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        // Room for a few more (a response's headers are often appended to): one allocation, not one per field.
        fields.reserveCapacity(elements.count + 3)
        for (name, value) in elements { append(name, value) }
    }

    public var count: Int { fields.count }

    public mutating func append(_ name: String, _ value: String) {
        fields.append(Field(name: Self.lowercase(name), value: value))
    }

    /// Appends a field whose name is known to be lowercase already (a request's, as they arrive: room for a
    /// typical request's fields at the first, instead of growing the array one doubling at a time).
    mutating func appendLowercased(_ name: String, _ value: String) {
        if fields.isEmpty { fields.reserveCapacity(8) }
        fields.append(Field(name: name, value: value))
    }

    /// Lowercases only when needed (HTTP/2 names already are).
    static func lowercase(_ name: String) -> String {
        name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? name.lowercased() : name
    }

    /// Replaces every field called `name` with one field of `value` (or removes it when nil).
    public mutating func set(_ name: String, _ value: String?) {
        let lower = Self.lowercase(name)
        fields.removeAll { $0.name == lower }
        if let value { fields.append(Field(name: lower, value: value)) }
    }

    /// The first value of `name`, if any.
    public subscript(name: String) -> String? {
        let lower = Self.lowercase(name)
        return fields.first { $0.name == lower }?.value
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        let lower = Self.lowercase(name)
        return fields.compactMap { $0.name == lower ? $0.value : nil }
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}
