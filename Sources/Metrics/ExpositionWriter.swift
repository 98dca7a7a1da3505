// APNs Sandbox — Prometheus text exposition format 0.0.4: lines, escaping, numbers.
import Foundation

/// Writes families in the text format Prometheus scrapes (`text/plain; version=0.0.4`):
/// `# HELP` and `# TYPE` once per family, then one line per sample, `name{label="value"} number`.
///
/// HELP text escapes `\` and newlines; label values escape `\`, `"` and newlines; numbers are integers
/// when they are whole, `+Inf`, `-Inf` and `NaN` otherwise as Prometheus spells them.
public struct ExpositionWriter: Sendable {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public private(set) var text = ""

    public init() {}

    public mutating func family(_ name: String, type: MetricType, help: String) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(type.rawValue)\n"
    }

    public mutating func sample(_ name: String, _ labels: [(name: String, value: String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, label) in labels.enumerated() {
                if index > 0 { text += "," }
                text += label.name + "=\"" + Self.escapeLabelValue(label.value) + "\""
            }
            text += "}"
        }
        text += " " + Self.format(value) + "\n"
    }

    public static func escapeHelp(_ text: String) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "\n" }) else { return text }
        return text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    public static func escapeLabelValue(_ text: String) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "\n" || $0 == "\"" }) else { return text }
        return text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
            .replacingOccurrences(of: "\"", with: "\\\"")
    }

    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// The `# TYPE` of a family.
public enum MetricType: String, Sendable {
    case counter
    case gauge
    case histogram
}
