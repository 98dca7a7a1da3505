// APNs Sandbox — a command's arguments, parsed against its options and checked.
import Foundation

/// Options and operands of one invocation. Values are typed on access: a bad one is a ``UsageError`` that
/// names the option.
struct ParsedArguments: Sendable {
    let command: Command
    private(set) var values: [String: String] = [:]
    private(set) var switches: Set<String> = []
    private(set) var operands: [String] = []
    /// `--help` or `-h` was given.
    private(set) var wantsHelp = false

    /// Parses `--name VALUE`, `--name=VALUE`, switches, `--` (everything after it is an operand) and operands
    /// (`-` alone is one: standard input).
    init(_ arguments: [String], for command: Command) throws {
        self.command = command
        let options = Dictionary(command.allOptions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var index = 0
        var onlyOperands = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyOperands || argument == "-" || !argument.hasPrefix("-") {
                operands.append(argument)
                continue
            }
            if argument == "--" {
                onlyOperands = true
                continue
            }
            if argument == "--help" || argument == "-h" {
                wantsHelp = true
                continue
            }
            var name = argument
            var inline: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = options[name] else { throw UsageError("unknown option \(name)") }
            guard option.value != nil else {
                guard inline == nil else { throw UsageError("option \(name) takes no value") }
                switches.insert(name)
                continue
            }
            guard values[name] == nil else { throw UsageError("option \(name) given twice") }
            if let inline {
                values[name] = inline
            } else {
                guard index < arguments.count else { throw UsageError("option \(name) needs a value") }
                values[name] = arguments[index]
                index += 1
            }
        }
        guard wantsHelp || command.operandCount.contains(operands.count) else {
            let range = command.operandCount
            let wanted = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw UsageError(operands.count > range.upperBound && range.upperBound == 0
                ? "unexpected argument \(operands[0])"
                : "expected \(wanted) argument\(range.upperBound == 1 ? "" : "s") (\(command.operands)), got \(operands.count)")
        }
    }

    func value(_ name: String) -> String? { values[name] }

    func has(_ name: String) -> Bool { switches.contains(name) }

    /// Whether `--json` was given.
    var json: Bool { has("--json") }

    /// A whole number within `range`, or nil when the option is absent.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = values[name] else { return nil }
        guard let number = Int64(text), range.contains(number) else {
            throw UsageError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(text)")
        }
        return number
    }

    /// A number of seconds from 0 to `limit` (fractions allowed), or nil when the option is absent. The
    /// bound keeps every later conversion to milliseconds (`Int64`) in range.
    func seconds(_ name: String, atMost limit: Double = 86_400) throws -> Double? {
        guard let text = values[name] else { return nil }
        guard let number = Double(text), number.isFinite, number >= 0 else {
            throw UsageError("\(name) must be a number of seconds, not \(text)")
        }
        guard number <= limit else {
            throw UsageError("\(name) must be at most \(Int(limit)) seconds, not \(text)")
        }
        return number
    }

    /// A usage error when `dependent` is given without `required` (`--wait-timeout` without `--wait`).
    func requires(_ required: String, for dependent: String) throws {
        let given = { (name: String) in self.values[name] != nil || self.switches.contains(name) }
        if given(dependent) && !given(required) { throw UsageError("\(dependent) needs \(required)") }
    }

    /// A usage error when more than one of `names` is given.
    func atMostOne(of names: [String]) throws {
        let given = names.filter { values[$0] != nil || switches.contains($0) }
        if given.count > 1 { throw UsageError("\(given.joined(separator: " and ")) do not go together") }
    }

    /// One of `choices`, or nil when the option is absent.
    func choice(_ name: String, _ choices: [String]) throws -> String? {
        guard let text = values[name] else { return nil }
        guard choices.contains(text) else {
            throw UsageError("\(name) must be one of \(choices.joined(separator: ", ")), not \(text)")
        }
        return text
    }

    /// A comma-separated list (empty items dropped), or [] when the option is absent.
    func list(_ name: String) -> [String] {
        values[name].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } } ?? []
    }

    /// The operand at `index`, if given.
    func operand(_ index: Int) -> String? { index < operands.count ? operands[index] : nil }
}
