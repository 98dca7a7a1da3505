// APNs Sandbox — the hook through which parts of the sandbox (faults, the virtual clock) take part in
// `POST /api/v1/reset` and in snapshots.
import APNsProtocol
import Synchronization
import Support

/// What a reset covers: the whole sandbox, or one team, one app or one device (docs/reset-and-snapshots.md).
public enum ResetScope: Sendable, Equatable {
    case all
    /// A team: every app whose team it is.
    case team(String)
    /// An app, by its bundle ID.
    case app(String)
    /// A device, by its token (lowercase hex).
    case device(String)
}

/// A part of the sandbox with state of its own that a reset puts back and a snapshot carries: the fault
/// rules, the virtual clock. It plugs in with one line, `server.steering.register(myPart)` (in
/// `SandboxServer.init`, or from a test), and owns one section of the snapshot document.
///
/// The sandbox calls it from a worker thread of the API (never an event loop), one reset or restore at a
/// time; it must be safe against its own traffic meanwhile (pushes, API calls).
///
/// A snapshot section is a ``JSON`` value the participant defines (write `version` fields of your own if the
/// shape may change). ``JSONObjectReader`` reads one with errors that name the path inside the section; the
/// sandbox puts the section's name in front (`faults.rules[2].match`).
public protocol SteeringParticipant: Sendable {
    /// The section's key in a snapshot document (`faults`, `clock`): lowercase letters, digits and `-`, not
    /// a key of the document itself (`version`, `devices`, …), unique among the participants.
    var name: String { get }

    /// Puts back what the configuration seeds, for `scope` only (`.all`: everything of yours). Called before
    /// the store is reset. A thrown error fails the reset (500) after the participants called before it.
    func reset(_ scope: ResetScope) throws

    /// The current state as a JSON value (any JSON; an object usually).
    func export() throws -> JSON

    /// Checks a section without changing anything. Throws ``SnapshotSectionError`` naming what is wrong
    /// (the path inside the section); any other error is reported with its description.
    func validate(_ section: JSON) throws

    /// Replaces the state with `section`, which ``validate(_:)`` accepted. A document without the section
    /// calls ``reset(_:)`` with `.all` instead.
    func restore(_ section: JSON) throws
}

/// A snapshot section (or a part of it) that cannot be restored: where (the path inside the section,
/// `rules[2].match`; empty for the section itself) and why.
public struct SnapshotSectionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }

    /// The error with `prefix` (a section name, `devices[2]`) in front of its path.
    func inside(_ prefix: String) -> SnapshotSectionError {
        SnapshotSectionError(path: path.isEmpty ? prefix : path.hasPrefix("[") ? prefix + path : prefix + "." + path, message)
    }
}

/// The registered participants, in registration order.
public final class SteeringParticipants: Sendable {
    private let participants = Locked<[any SteeringParticipant]>([])

    /// The document's own keys, which no participant may take.
    static let reservedNames: Set<String> = [
        "version", "takenAt", "devices", "apps", "providerKeys", "webhooks", "notifications",
    ]

    public init() {}

    /// Adds `participant`. Its name must be well-formed, not reserved and not taken (a programming error
    /// otherwise: this traps).
    public func register(_ participant: any SteeringParticipant) {
        let name = participant.name
        precondition(
            !name.isEmpty && name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }),
            "a steering participant's name is lowercase letters, digits and -: \(name)")
        precondition(!Self.reservedNames.contains(name), "\(name) is a key of the snapshot document itself")
        participants.withLock { list in
            precondition(!list.contains { $0.name == name }, "a steering participant named \(name) is registered already")
            list.append(participant)
        }
    }

    /// Every participant, in registration order.
    public var all: [any SteeringParticipant] { participants.withLock { $0 } }
}
