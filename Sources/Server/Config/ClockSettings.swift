// APNs Sandbox — configuration of the clock: real time, or a virtual clock a test steers (`/api/v1/clock`).
import Sandbox

/// `clock`: whether the sandbox's time is a ``VirtualClock`` that `/api/v1/clock` can freeze, advance and set,
/// and how it starts. Off by default: the system clock, at no cost, and the clock's API only reads.
public struct ClockSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// Every time-based rule of the sandbox follows a clock the API can steer.
    public var virtual = false
    /// The virtual clock starts (and is reset to) frozen.
    public var frozen = false
    /// The instant the virtual clock starts at (and is reset to), RFC 3339 (`2026-01-01T00:00:00Z`); nil: real
    /// time.
    public var startAt: String?

    public init(virtual: Bool = false, frozen: Bool = false, startAt: String? = nil) {
        self.virtual = virtual
        self.frozen = frozen
        self.startAt = startAt
    }

    enum Keys: String, CodingKey, CaseIterable {
        case virtual, frozen, startAt
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        virtual = try section(.virtual, \.virtual)
        frozen = try section(.frozen, \.frozen)
        startAt = try section(.startAt, \.startAt)
    }

    /// `startAt` in ms since the epoch (nil when absent or not an instant: ``problems()`` reports that).
    var startMilliseconds: Int64? { startAt.flatMap(ISOTimestamp.milliseconds(parsing:)) }

    /// Problems that make the settings unusable, for `SandboxConfiguration.validate()`.
    func problems() -> [String] {
        var problems: [String] = []
        if let startAt {
            if let start = startMilliseconds {
                if !(0...VirtualClock.latestMilliseconds).contains(start) {
                    problems.append("clock.startAt must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z")
                }
            } else {
                problems.append(
                    "clock.startAt must be an RFC 3339 instant such as \"2026-01-01T00:00:00Z\" (got \"\(startAt)\")")
            }
        }
        if !virtual && (frozen || startAt != nil) {
            problems.append("clock.frozen and clock.startAt need clock.virtual: true")
        }
        return problems
    }
}
