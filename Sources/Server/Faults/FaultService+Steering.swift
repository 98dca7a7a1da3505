// APNs Sandbox — fault rules and the virtual clock in resets and snapshots (docs/reset-and-snapshots.md).
import APNsProtocol
import Foundation
import Sandbox

/// Faults: a whole reset puts the configuration's rules back; a scoped one removes the API's rules aimed at that
/// team, app or device. A snapshot's `faults` section is `{"rules": [rule, …]}` in the API's shape.
extension FaultService: SteeringParticipant {
    var name: String { "faults" }

    func reset(_ scope: ResetScope) throws {
        switch scope {
        case .all: reset()
        case .team(let team): book.removeAll { $0.source == .api && $0.match.teamID == team }
        case .app(let bundleID): book.removeAll { $0.source == .api && $0.match.bundleID == bundleID }
        case .device(let token): book.removeAll { $0.source == .api && $0.match.deviceToken == token }
        }
    }

    func export() throws -> JSON {
        let data = try JSONEncoder().encode(["rules": specs()])
        return try JSON.parse(Array(data))
    }

    func validate(_ section: JSON) throws {
        _ = try rules(in: section)
    }

    func restore(_ section: JSON) throws {
        do {
            try restore(try rules(in: section))
        } catch let problem as FaultRuleSpec.Problem {
            throw SnapshotSectionError(path: "rules" + problem.field, problem.message)
        }
    }

    /// The rules of a section, decoded and checked (nothing changes).
    private func rules(in section: JSON) throws -> [FaultRuleSpec] {
        guard let members = section.members, members.allSatisfy({ $0.0 == "rules" }), let rules = section["rules"] else {
            throw SnapshotSectionError(path: "", "must be {\"rules\": [...]}")
        }
        let specs: [FaultRuleSpec]
        do {
            specs = try JSONDecoder().decode([FaultRuleSpec].self, from: Data(rules.serialized.utf8))
        } catch let error as DecodingError {
            throw SnapshotSectionError(path: "rules", SandboxConfiguration.describe(error))
        }
        for (index, spec) in specs.enumerated() {
            do throws(FaultRuleSpec.Problem) {
                _ = try spec.rule(now: clock.nowMilliseconds, source: .api)
            } catch {
                throw SnapshotSectionError(path: "rules[\(index)]" + (error.field.isEmpty ? "" : ".\(error.field)"), error.message)
            }
        }
        return specs
    }
}

/// The clock: a whole reset puts it back to real time (a scoped one leaves it). A snapshot's `clock` section is
/// its state (`mode`, `nowMilliseconds`, …); restoring it on a server with the virtual clock sets that instant and
/// mode, and on one without it changes nothing.
extension ClockService: SteeringParticipant {
    var name: String { "clock" }

    func reset(_ scope: ResetScope) throws {
        if scope == .all { reset() }
    }

    func export() throws -> JSON {
        try JSON.parse(Array(JSONEncoder().encode(state)))
    }

    func validate(_ section: JSON) throws {
        _ = try saved(section)
    }

    func restore(_ section: JSON) throws {
        let saved = try saved(section)
        guard state.virtual else { return }
        switch saved.mode {
        // No waits here: the restore waits once, after the engine adopted the snapshot's notifications.
        case "real":
            _ = try backToReal(settles: false)
        case "frozen":
            _ = try freeze()
            _ = try set(toMilliseconds: saved.nowMilliseconds, settles: false)
        default:
            _ = try set(toMilliseconds: saved.nowMilliseconds, settles: false)
            _ = try resume()
        }
    }

    private func saved(_ section: JSON) throws -> State {
        do {
            let state = try JSONDecoder().decode(State.self, from: Data(section.serialized.utf8))
            guard ["real", "running", "frozen"].contains(state.mode) else {
                throw SnapshotSectionError(path: "mode", "must be real, running or frozen")
            }
            return state
        } catch let error as DecodingError {
            throw SnapshotSectionError(path: "", SandboxConfiguration.describe(error))
        }
    }
}
