// APNs Sandbox — JSON inside Codable types: API bodies and configuration files.

/// A ``JSON`` value inside a `Codable` type (an API response's payload, a configuration's extension).
///
/// Decoding goes through the decoder's containers, which do not say in which order an object's members
/// came, so decoded objects have their members sorted by key (the same text every time). Encoding writes
/// members in order, the last of duplicate keys only, and numbers as integers when they are whole and
/// below 10^15, else as doubles; a number beyond a double's range (`1e400`) as its text in a string. To keep a document exactly as written, parse it with ``JSON/parse(_:)-swift.type.method``.
extension JSON: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            self = .object(try object.allKeys.sorted { $0.stringValue < $1.stringValue }.map { key in
                (key.stringValue, try object.decode(JSON.self, forKey: key))
            })
        } else if var array = try? decoder.unkeyedContainer() {
            var items: [JSON] = []
            while !array.isAtEnd { items.append(try array.decode(JSON.self)) }
            self = .array(items)
        } else {
            let value = try decoder.singleValueContainer()
            if value.decodeNil() {
                self = .null
            } else if let bool = try? value.decode(Bool.self) {
                self = .bool(bool)
            } else if let integer = try? value.decode(Int64.self) {
                self = .number(String(integer))
            } else if let double = try? value.decode(Double.self) {
                self = .number(double)
            } else {
                self = .string(try value.decode(String.self))
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var object = encoder.container(keyedBy: Key.self)
            var lastIndex: [String: Int] = [:]
            for (index, member) in members.enumerated() { lastIndex[member.0] = index }
            for (index, member) in members.enumerated() where lastIndex[member.0] == index {
                try object.encode(member.1, forKey: Key(stringValue: member.0))
            }
        case .array(let items):
            var array = encoder.unkeyedContainer()
            for item in items { try array.encode(item) }
        case .string(let text):
            var value = encoder.singleValueContainer()
            try value.encode(text)
        case .number(let text):
            var value = encoder.singleValueContainer()
            if let integer = Int64(text) {
                try value.encode(integer)
            } else if let double = Double(text), double.isFinite {
                if double == double.rounded(), abs(double) < 1e15 { try value.encode(Int64(double)) } else { try value.encode(double) }
            } else {
                // Valid JSON beyond a double's range (`1e400`): its text, as a string, rather than an error.
                try value.encode(text)
            }
        case .bool(let flag):
            var value = encoder.singleValueContainer()
            try value.encode(flag)
        case .null:
            var value = encoder.singleValueContainer()
            try value.encodeNil()
        }
    }
}
