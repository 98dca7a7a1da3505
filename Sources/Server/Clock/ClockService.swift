// APNs Sandbox — the sandbox's clock as the API steers it: reading it, and the virtual clock's changes.
import APNsProtocol
import Events
import Sandbox

/// What `/api/v1/clock` reads and changes (`clock.virtual` in the configuration).
///
/// With a ``VirtualClock`` every change is carried out on it, waits for `settle` (what the timers that fell due
/// set off has committed: a stored push that expired reads `expired` as soon as the change is answered),
/// is announced as a `clock.changed` event, and is followed by `onChange` (the server prunes at the new time). With the system clock only ``state`` answers;
/// the changes throw 409 `clock_not_virtual`, naming the configuration key.
final class ClockService: Sendable {
    /// The clock every part of the server reads.
    let clock: any SandboxClock
    /// The same clock when it is virtual.
    let virtual: VirtualClock?
    private let events: EventRecorder?
    private let settle: @Sendable () -> Void
    private let onChange: @Sendable () -> Void

    init(
        clock: any SandboxClock, events: EventRecorder?, settle: @escaping @Sendable () -> Void = {},
        onChange: @escaping @Sendable () -> Void = {}
    ) {
        self.clock = clock
        virtual = clock as? VirtualClock
        self.events = events
        self.settle = settle
        self.onChange = onChange
    }

    /// The clock a configuration asks for: a ``VirtualClock`` (started as `clock.startAt` / `clock.frozen` say)
    /// with `clock.virtual`, else the system clock.
    static func makeClock(_ settings: ClockSettings) -> any SandboxClock {
        guard settings.virtual else { return SystemClock() }
        return VirtualClock(startingAt: settings.startMilliseconds, frozen: settings.frozen)
    }

    /// The clock's reading as the API shows it.
    struct State: Codable, Sendable, Equatable {
        /// RFC 3339, UTC, milliseconds.
        var now: String
        var nowMilliseconds: Int64
        /// `real` (real time, no offset), `running` (real speed, shifted by `offsetMilliseconds`), `frozen`.
        var mode: String
        var virtual: Bool
        /// The clock's wall time minus real wall time.
        var offsetMilliseconds: Int64

        init(_ reading: VirtualClock.Reading) {
            self.init(
                now: reading.nowMilliseconds, mode: reading.isReal ? "real" : reading.mode.rawValue, virtual: true,
                offset: reading.offsetMilliseconds)
        }

        init(now milliseconds: Int64, mode: String, virtual: Bool, offset: Int64) {
            now = ISOTimestamp.string(milliseconds: milliseconds)
            nowMilliseconds = milliseconds
            self.mode = mode
            self.virtual = virtual
            offsetMilliseconds = offset
        }
    }

    var state: State {
        if let virtual { return State(virtual.reading) }
        return State(now: clock.nowMilliseconds, mode: "real", virtual: false, offset: 0)
    }

    // Freezing and resuming fire no timer: nothing to wait for.
    func freeze() throws -> State {
        try change("frozen", settles: false) { $0.freeze() }
    }

    func advance(byMilliseconds milliseconds: Int64) throws -> State {
        try change("advanced", by: milliseconds) { $0.advance(byMilliseconds: milliseconds) }
    }

    /// - Parameter settles: Whether the answer waits for what the timers that fell due set off (not for a restore,
    ///   which waits once at its end).
    func set(toMilliseconds milliseconds: Int64, settles: Bool = true) throws -> State {
        try change("set", settles: settles) { $0.set(toMilliseconds: milliseconds) }
    }

    func resume() throws -> State {
        try change("resumed", settles: false) { $0.resume() }
    }

    func backToReal(settles: Bool = true) throws -> State {
        try change("real", settles: settles) { $0.backToReal() }
    }

    /// Back to the configured start (real time, or `clock.startAt`, frozen if `clock.frozen`), for a reset of
    /// the whole sandbox: no event (the reset announces itself), a no-op with the system clock. It waits for what
    /// the timers a jump forward fired set off, so that none of it is saved after the reset forgot the engine's state.
    func reset() {
        guard let virtual else { return }
        virtual.reset()
        settle()
        onChange()
    }

    private func change(
        _ name: String, by milliseconds: Int64? = nil, settles: Bool = true, _ body: (VirtualClock) -> VirtualClock.Reading
    ) throws -> State {
        guard let virtual else {
            throw ServiceError.clockNotVirtual
        }
        let previous = virtual.nowMilliseconds
        let state = State(body(virtual))
        if settles { settle() }
        onChange()
        events?.append(Self.changed(name, state: state, previous: previous, by: milliseconds))
        return state
    }

    /// A `clock.changed` event: `change` (`frozen`, `advanced`, `set`, `resumed`, `real`), the new state's
    /// fields, `previousMilliseconds` (the time before), and `byMilliseconds` for an advance.
    static func changed(_ change: String, state: State, previous: Int64, by milliseconds: Int64?) -> EventDraft {
        var writer = JSONWriter()
        writer.member("change", change)
        writer.member("now", state.now)
        writer.member("nowMilliseconds", state.nowMilliseconds)
        writer.member("previousMilliseconds", previous)
        writer.member("byMilliseconds", milliseconds)
        writer.member("mode", state.mode)
        writer.member("offsetMilliseconds", state.offsetMilliseconds)
        return EventDraft(type: .clockChanged, time: state.nowMilliseconds, data: writer.finish())
    }
}
