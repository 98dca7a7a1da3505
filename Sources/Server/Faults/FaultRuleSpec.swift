// APNs Sandbox — a fault rule as JSON: the configuration's `faults[]`, the API's bodies and answers.
import APNsProtocol
import Sandbox

/// A fault rule as written in the configuration file or sent to `POST /api/v1/faults` (docs/faults.md).
/// Every object rejects keys it does not know; ``rule(now:source:)`` checks the rest and builds the rule.
/// The answers of the API write a rule back in this shape, normalised (presets expanded, the seed and the
/// expiry explicit), so that a rule read from a snapshot is the same rule again.
struct FaultRuleSpec: Codable, Sendable, Equatable, StrictlyKeyed {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, name, preset, match, action, latency, probability, seed, count, expiresAt, durationSeconds
        case abovePerSecond, perSecond, percent, position
    }
    typealias Keys = CodingKeys

    /// The common cases, in one word.
    enum Preset: String, ConfigurationEnum {
        /// Every matching push 503 `ServiceUnavailable` for `durationSeconds`.
        case outage
        /// 429 `TooManyRequests` for matching pushes beyond `perSecond` each second.
        case throttle
        /// 500 `InternalServerError` for `percent` % of matching pushes.
        case flaky
    }

    var id: String?
    var name: String?
    var preset: Preset?
    var match: FaultMatchSpec?
    var action: FaultActionSpec?
    var latency: FaultLatencySpec?
    var probability: Double?
    var seed: UInt64?
    var count: Int?
    /// RFC 3339 UTC.
    var expiresAt: String?
    var durationSeconds: Double?
    var abovePerSecond: Int?
    var perSecond: Int?
    var percent: Double?
    /// API only: where the new rule goes in the order (0: first); last when absent.
    var position: Int?

    init() {}

    init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        id = try section(.id, \.id)
        name = try section(.name, \.name)
        preset = try section(.preset, \.preset)
        match = try section(.match, \.match)
        action = try section(.action, \.action)
        latency = try section(.latency, \.latency)
        probability = try section(.probability, \.probability)
        seed = try section(.seed, \.seed)
        count = try section(.count, \.count)
        expiresAt = try section(.expiresAt, \.expiresAt)
        durationSeconds = try section(.durationSeconds, \.durationSeconds)
        abovePerSecond = try section(.abovePerSecond, \.abovePerSecond)
        perSecond = try section(.perSecond, \.perSecond)
        percent = try section(.percent, \.percent)
        position = try section(.position, \.position)
    }

    /// A problem with a rule: the path of the field (`action.reject.reason`) and what is wrong.
    struct Problem: Error, CustomStringConvertible {
        var field: String
        var message: String
        var description: String { field.isEmpty ? message : "\(field): \(message)" }
    }

    /// The rule, checked. `now` is the sandbox clock's (for `durationSeconds`); a rule without `id` gets a new
    /// one and one without `seed` a random seed (shown in its answer, so the run can be repeated).
    func rule(now: Int64, source: FaultRule.Source) throws(Problem) -> FaultRule {
        let ruleID = id ?? "flt_" + (0..<12).map { _ in String(Int.random(in: 0..<16), radix: 16) }.joined()
        guard Self.isValidID(ruleID) else {
            throw Problem(field: "id", message: "must be 1–64 characters of A–Z a–z 0–9 _ - .")
        }
        if let name, name.isEmpty || name.utf8.count > 200 {
            throw Problem(field: "name", message: "must be 1–200 characters")
        }
        var action = try self.action?.action()
        var probability = probability ?? 1
        var abovePerSecond = abovePerSecond
        var expiresAt = try expiresAt.map { text throws(Problem) -> Int64 in
            guard let milliseconds = ISOTimestamp.milliseconds(from: text) else {
                throw Problem(field: "expiresAt", message: "must be an RFC 3339 UTC time such as 2026-12-02T08:00:00Z")
            }
            return milliseconds
        }
        if let durationSeconds {
            guard expiresAt == nil else { throw Problem(field: "durationSeconds", message: "give expiresAt or durationSeconds, not both") }
            guard durationSeconds > 0, durationSeconds <= 366 * 86_400 else {
                throw Problem(field: "durationSeconds", message: "must be more than 0 and at most a year")
            }
            expiresAt = now + Int64(durationSeconds * 1000)
        }
        if let preset {
            guard action == nil else { throw Problem(field: "action", message: "the \(preset.rawValue) preset sets the action") }
            switch preset {
            case .outage:
                guard expiresAt != nil || count != nil else {
                    throw Problem(field: "durationSeconds", message: "the outage preset needs durationSeconds (or expiresAt, or count)")
                }
                action = .reject(.serviceUnavailable, timestamp: nil)
            case .throttle:
                guard let perSecond, perSecond >= 0 else {
                    throw Problem(field: "perSecond", message: "the throttle preset needs perSecond (0 or more)")
                }
                abovePerSecond = perSecond
                action = .reject(.tooManyRequests, timestamp: nil)
            case .flaky:
                guard let percent, percent > 0, percent <= 100 else {
                    throw Problem(field: "percent", message: "the flaky preset needs percent (more than 0, at most 100)")
                }
                probability = percent / 100
                action = .reject(.internalServerError, timestamp: nil)
            }
        } else {
            if perSecond != nil { throw Problem(field: "perSecond", message: "belongs to the throttle preset (use abovePerSecond)") }
            if percent != nil { throw Problem(field: "percent", message: "belongs to the flaky preset (use probability)") }
        }
        guard let action = action ?? (latency != nil ? FaultAction.none : nil) else {
            throw Problem(field: "action", message: "is required (or a preset, or latency alone)")
        }
        if let seed, seed > UInt64(Int64.max) { throw Problem(field: "seed", message: "must be 0 to 9223372036854775807") }
        guard probability > 0, probability <= 1 else { throw Problem(field: "probability", message: "must be more than 0 and at most 1") }
        if let count, count < 1 { throw Problem(field: "count", message: "must be 1 or more") }
        if let abovePerSecond, abovePerSecond < 0 { throw Problem(field: "abovePerSecond", message: "must be 0 or more") }
        if let position, position < 0 { throw Problem(field: "position", message: "must be 0 or more") }
        return FaultRule(
            id: ruleID, name: name, match: try match?.match() ?? FaultMatch(), action: action,
            latency: try latency?.latency(), probability: probability, seed: seed ?? UInt64.random(in: 0...UInt64(Int64.max)),
            count: count, expiresAt: expiresAt, abovePerSecond: abovePerSecond, createdAt: now, source: source)
    }

    /// The rule written back (normalised: no preset, explicit seed and expiry).
    init(_ rule: FaultRule) {
        id = rule.id
        name = rule.name
        match = FaultMatchSpec(rule.match)
        if rule.action != .none { action = FaultActionSpec(rule.action) }
        latency = rule.latency.map(FaultLatencySpec.init)
        probability = rule.probability
        seed = rule.seed
        count = rule.count
        expiresAt = rule.expiresAt.map { ISOTimestamp.string(milliseconds: $0) }
        abovePerSecond = rule.abovePerSecond
    }

    static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") }
    }
}
