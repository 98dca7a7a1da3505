// APNs Sandbox — the fault rules of a running server: the configuration's, the API's, reset and restore.
import APNsProtocol
import Foundation
import Sandbox

/// Owns the server's ``FaultBook``: seeds it with the configuration's rules, adds and removes the API's, and puts
/// the configuration's back on reset (with their seeds, so that a reset run repeats the same fault sequence).
final class FaultService: Sendable {
    let book: FaultBook
    /// The configuration's rules as written, with an `id` and a `seed` each (fixed at start).
    private let configured: [FaultRuleSpec]
    let clock: any SandboxClock

    /// - Throws: ``ConfigurationError`` for a bad rule (also found by `validate()`).
    init(configuration: SandboxConfiguration, clock: any SandboxClock) throws {
        self.clock = clock
        let rules = try configuration.faultRules(now: clock.nowMilliseconds)
        configured = zip(configuration.faults, rules).map { spec, rule in
            var spec = spec
            spec.id = rule.id
            spec.seed = rule.seed
            return spec
        }
        book = FaultBook(rules: rules)
    }

    /// The configuration's rules as they are at `now` (a `durationSeconds` counts from `now`).
    func configuredRules(now: Int64) -> [FaultRule] {
        configured.compactMap { try? $0.rule(now: now, source: .configuration) }
    }

    /// Back to the configuration's rules, with fresh counters.
    func reset() {
        book.replaceAll(with: configuredRules(now: clock.nowMilliseconds))
    }

    /// Adds the rule `spec` describes.
    /// - Throws: ``ServiceError``: `invalid` (kind `fault`) naming the field, `exists` for a taken id, `limitReached`.
    func add(_ spec: FaultRuleSpec) throws -> FaultRule {
        let rule: FaultRule
        do {
            rule = try spec.rule(now: clock.nowMilliseconds, source: .api)
        } catch {
            throw ServiceError.invalid(kind: "fault", message: error.description)
        }
        do {
            try book.add(rule, at: spec.position)
        } catch .duplicateID(let id) {
            throw ServiceError.exists(kind: "fault rule", id: id)
        } catch .tooMany {
            throw ServiceError.limitReached(kind: "fault rule", limit: FaultBook.maxRules)
        }
        return rule
    }

    /// Every rule, written back as specs (a snapshot's `faults`).
    func specs() -> [FaultRuleSpec] {
        book.entries.map { FaultRuleSpec($0.rule) }
    }

    /// Checks `specs` (a snapshot's `faults`) and, only when every one is good, replaces every rule with them.
    /// - Throws: ``FaultRuleSpec/Problem`` with the index of the bad rule in its field (`[2].action.reject.reason`).
    func restore(_ specs: [FaultRuleSpec]) throws(FaultRuleSpec.Problem) {
        let now = clock.nowMilliseconds
        var rules: [FaultRule] = []
        for (index, spec) in specs.enumerated() {
            do throws(FaultRuleSpec.Problem) {
                let rule = try spec.rule(now: now, source: .api)
                guard !rules.contains(where: { $0.id == rule.id }) else {
                    throw FaultRuleSpec.Problem(field: "id", message: "\(rule.id) is used twice")
                }
                rules.append(rule)
            } catch {
                throw FaultRuleSpec.Problem(field: "[\(index)]" + (error.field.isEmpty ? "" : ".\(error.field)"), message: error.message)
            }
        }
        guard rules.count <= FaultBook.maxRules else {
            throw FaultRuleSpec.Problem(field: "", message: "at most \(FaultBook.maxRules) fault rules")
        }
        book.replaceAll(with: rules)
    }
}
