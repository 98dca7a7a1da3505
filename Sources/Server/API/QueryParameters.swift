// APNs Sandbox — reading `?a=1&b=2` query strings.
import Foundation
import HTTP

/// Decoded query parameters (the subscript gives the last value), with typed accessors that report bad input.
struct QueryParameters {
    /// Every value of each name, in order.
    private var values: [String: [String]] = [:]

    init(_ query: Substring?) {
        guard let query else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(parts[0])
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            values[name, default: []].append(value)
        }
    }

    subscript(name: String) -> String? { values[name]?.last.flatMap { $0.isEmpty ? nil : $0 } }

    /// A list parameter: every value of `name`, each split at commas (`type=a,b&type=c` → a, b, c), blanks dropped.
    func list(_ name: String) -> [String] {
        (values[name] ?? []).flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// An integer in `range`, the default when absent, or an APIError naming the parameter.
    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = self[name] else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw APIError(status: 400, code: "invalid_parameter", message: "\(name) must be an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }

    /// A number of seconds in `range` (fractions allowed), nil when absent.
    func seconds(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = self[name] else { return nil }
        guard let value = Double(text), range.contains(value) else {
            throw APIError(status: 400, code: "invalid_parameter", message: "\(name) must be a number of seconds in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }

    /// `true` or `false` (absent: false), or an APIError naming the parameter.
    func flag(_ name: String) throws -> Bool {
        switch self[name] {
        case nil, "false": return false
        case "true": return true
        default: throw APIError(status: 400, code: "invalid_parameter", message: "\(name) must be true or false")
        }
    }

    private static func decode(_ part: Substring) -> String {
        String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncodingOrSelf
    }
}

/// An API error with the sandbox's JSON shape `{"error":{"code","message"}}`: something the client
/// asked for that cannot be done. Failures of the server itself are thrown as they are; the router's
/// ``ErrorResponder`` answers those with a logged id, never their text.
struct APIError: HTTPErrorResponse {
    var status: Int
    var code: String
    var message: String

    var response: HTTPResponse { .jsonError(status: status, code: code, message: message) }
}
