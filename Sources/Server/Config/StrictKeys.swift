// APNs Sandbox — configuration sections that reject keys they do not know.
import APNsProtocol
import Foundation

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

/// Finds the number a decoder could not take (Foundation says only "The given data was not valid JSON" for
/// `3.5` or `1e30` where an integer belongs, without a key path).
enum UnfitNumber {
    /// The path as written (`limits.maxConnections`) and the text of the first number in `tree` that is not
    /// a 64-bit integer and whose replacement by `0` lets `decodes` succeed; nil when there is none.
    static func find(in tree: JSON, decodes: (JSON) -> Bool) -> (path: String, number: String)? {
        var candidates: [([JSONPathStep], String)] = []
        collect(tree, path: [], into: &candidates)
        for (path, text) in candidates where decodes(replacing(tree, at: path[...], with: .number(0))) {
            return (describe(path), text)
        }
        return nil
    }

    enum JSONPathStep {
        case key(String)
        case index(Int)
    }

    private static func collect(_ value: JSON, path: [JSONPathStep], into candidates: inout [([JSONPathStep], String)]) {
        switch value {
        case .number(let text) where Int64(text) == nil:
            candidates.append((path, text))
        case .object(let members):
            for (key, member) in members { collect(member, path: path + [.key(key)], into: &candidates) }
        case .array(let items):
            for (index, item) in items.enumerated() { collect(item, path: path + [.index(index)], into: &candidates) }
        default:
            break
        }
    }

    private static func replacing(_ value: JSON, at path: ArraySlice<JSONPathStep>, with replacement: JSON) -> JSON {
        guard let step = path.first else { return replacement }
        switch (step, value) {
        case (.key(let key), .object(let members)):
            return .object(members.map { $0.0 == key ? ($0.0, replacing($0.1, at: path.dropFirst(), with: replacement)) : $0 })
        case (.index(let index), .array(let items)):
            return .array(items.enumerated().map { $0.offset == index ? replacing($0.element, at: path.dropFirst(), with: replacement) : $0.element })
        default:
            return value
        }
    }

    private static func describe(_ path: [JSONPathStep]) -> String {
        path.reduce("") { text, step in
            switch step {
            case .key(let key): text.isEmpty ? key : text + "." + key
            case .index(let index): text + "[\(index)]"
            }
        }
    }
}
