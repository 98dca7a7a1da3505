// APNs Sandbox — configuration sections that reject keys they do not know.

/// Any key of a JSON object, to list every key a section was given.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        nil
    }
}

/// A configuration section whose unknown keys are errors (a typo such as `"authentcation"` must not
/// silently leave the default in place). Its `Keys` list every key it knows.
protocol StrictlyKeyed {
    associatedtype Keys: CodingKey & CaseIterable
}

extension StrictlyKeyed {
    /// Throws a decoding error naming the first key of the object being decoded that `Keys` does not list
    /// (`listeners.0.adminn: unknown key; known: …`, through ``SandboxConfiguration/load(path:)``).
    static func rejectUnknownKeys(in decoder: any Decoder) throws {
        let known = Keys.allCases.map(\.stringValue)
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: container.codingPath + [key],
                debugDescription: "unknown key; known here: \(known.joined(separator: ", "))"))
        }
    }
}

/// Coding paths as users write them: `listeners[0].host`, not `Index 0`.
enum KeyPathText {
    static func text(_ path: [any CodingKey]) -> String {
        var result = ""
        for key in path {
            if let index = key.intValue {
                result += "[\(index)]"
            } else {
                result += result.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return result
    }
}
