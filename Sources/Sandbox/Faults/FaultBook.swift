// APNs Sandbox — the fault rules in force, in order, with their generators and counters.
import Synchronization
import Support

/// The ordered list of ``FaultRule``s and what they did: ``decide(_:now:)`` is asked once per push that passed
/// APNs' path, header and authentication checks.
///
/// Order: the configuration's rules in file order, then the API's in the order they were added (or at the
/// position given). For each push, the rules are tried in that order; a rule that is used up or past its expiry
/// is skipped; a rule that matches counts the match, then (for `abovePerSecond`) lets the first N matching pushes
/// of each second through, then draws against its probability from its own ``SeededGenerator``. The first rule
/// that gets that far is applied — its count goes down, its latency is drawn — and no other rule is tried.
///
/// With no rules at all the check is one atomic load (the provider endpoint's hot path).
public final class FaultBook: Sendable {
    /// At most this many rules (used-up and expired ones included, until deleted).
    public static let maxRules = 1000

    /// A rule with its running state.
    public struct Entry: Sendable, Equatable {
        public var rule: FaultRule
        /// Pushes the match selected (while the rule was in force).
        public var matched = 0
        /// Pushes it was applied to.
        public var applied = 0
        /// Applications left (nil: unlimited).
        public var remaining: Int?
        var generator: SeededGenerator
        var windowSecond: Int64 = .min
        var windowCount = 0

        init(_ rule: FaultRule) {
            self.rule = rule
            remaining = rule.count
            generator = SeededGenerator(seed: rule.seed)
        }

        /// `active`, `exhausted` (its count is used up) or `expired`.
        public func state(at now: Int64) -> String {
            if let remaining, remaining <= 0 { return "exhausted" }
            if let expiresAt = rule.expiresAt, now >= expiresAt { return "expired" }
            return "active"
        }

        public static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.rule == rhs.rule && lhs.matched == rhs.matched && lhs.applied == rhs.applied && lhs.remaining == rhs.remaining
        }
    }

    /// The rule applied to a push.
    public struct Decision: Sendable, Equatable {
        public var ruleID: String
        public var name: String?
        public var action: FaultAction
        /// Drawn from the rule's latency (0 without one).
        public var latencyMilliseconds: Int64
    }

    /// Applications so far: in all, and by action kind.
    public struct Totals: Sendable, Equatable {
        public var applied = 0
        public var byAction: [String: Int] = [:]
    }

    /// Why a rule was not added.
    public enum Problem: Error, Equatable {
        case duplicateID(String)
        case tooMany
    }

    private struct State {
        var entries: [Entry] = []
        var totals = Totals()
    }

    private let state = Locked(State())
    private let ruleCount = Atomic<Int>(0)

    public init(rules: [FaultRule] = []) {
        state.withLock { state in state.entries = rules.map(Entry.init) }
        ruleCount.store(rules.count, ordering: .releasing)
    }

    /// The rule to apply to `push` at `now` (sandbox-clock ms), or nil.
    public func decide(_ push: FaultSubject, now: Int64) -> Decision? {
        guard ruleCount.load(ordering: .acquiring) > 0 else { return nil }
        return state.withLock { state -> Decision? in
            for index in state.entries.indices {
                if let decision = Self.apply(&state.entries[index], to: push, now: now) {
                    state.totals.applied += 1
                    state.totals.byAction[decision.action.kind, default: 0] += 1
                    return decision
                }
            }
            return nil
        }
    }

    private static func apply(_ entry: inout Entry, to push: FaultSubject, now: Int64) -> Decision? {
        guard entry.state(at: now) == "active", entry.rule.match.matches(push) else { return nil }
        entry.matched += 1
        if let limit = entry.rule.abovePerSecond {
            let second = now / 1000
            if entry.windowSecond != second {
                entry.windowSecond = second
                entry.windowCount = 0
            }
            entry.windowCount += 1
            if entry.windowCount <= limit { return nil }
        }
        if entry.rule.probability < 1 {
            let draw = Double(entry.generator.next() >> 11) / Double(1 << 53)
            if draw >= entry.rule.probability { return nil }
        }
        let latency = entry.rule.latency?.draw(&entry.generator) ?? 0
        entry.applied += 1
        if let remaining = entry.remaining { entry.remaining = remaining - 1 }
        return Decision(ruleID: entry.rule.id, name: entry.rule.name, action: entry.rule.action, latencyMilliseconds: latency)
    }

    /// Adds `rule` at `position` (nil or past the end: last).
    public func add(_ rule: FaultRule, at position: Int? = nil) throws(Problem) {
        try state.withLock { state throws(Problem) in
            guard !state.entries.contains(where: { $0.rule.id == rule.id }) else { throw .duplicateID(rule.id) }
            guard state.entries.count < Self.maxRules else { throw .tooMany }
            let index = min(max(0, position ?? state.entries.count), state.entries.count)
            state.entries.insert(Entry(rule), at: index)
            ruleCount.store(state.entries.count, ordering: .releasing)
        }
    }

    /// Removes the rule `id`; false when there is none.
    @discardableResult
    public func remove(id: String) -> Bool {
        state.withLock { state in
            guard let index = state.entries.firstIndex(where: { $0.rule.id == id }) else { return false }
            state.entries.remove(at: index)
            ruleCount.store(state.entries.count, ordering: .releasing)
            return true
        }
    }

    /// Replaces every rule with `rules` (fresh generators and counters) and zeroes the totals: reset and restore.
    public func replaceAll(with rules: [FaultRule]) {
        state.withLock { state in
            state = State(entries: rules.map(Entry.init))
            ruleCount.store(rules.count, ordering: .releasing)
        }
    }

    /// Removes the rules `shouldRemove` selects; how many went.
    @discardableResult
    public func removeAll(where shouldRemove: (FaultRule) -> Bool) -> Int {
        state.withLock { state in
            let before = state.entries.count
            state.entries.removeAll { shouldRemove($0.rule) }
            ruleCount.store(state.entries.count, ordering: .releasing)
            return before - state.entries.count
        }
    }

    /// Every rule in order, with its counters.
    public var entries: [Entry] { state.withLock { $0.entries } }

    public func entry(id: String) -> Entry? { state.withLock { $0.entries.first { $0.rule.id == id } } }

    public var totals: Totals { state.withLock { $0.totals } }

    /// True when no rule exists.
    public var isEmpty: Bool { ruleCount.load(ordering: .acquiring) == 0 }
}
