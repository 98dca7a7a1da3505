// APNs Sandbox — where a label value's child sits in SandboxMetrics' arrays: switches, decided once per case.
import Sandbox

/// The `kind` label of the extension families: the configuration's kind, `invalid` when it does not parse.
enum ExtensionKind: String, Sendable, CaseIterable {
    case builtin
    case exec
    case webhook
    case invalid

    /// Its index in `allCases` (and in the metrics' arrays).
    var position: Int {
        switch self {
        case .builtin: 0
        case .exec: 1
        case .webhook: 2
        case .invalid: 3
        }
    }
}

extension SandboxMetrics {
    /// One action of each kind, in the order of `faultPosition(_:)` (their `kind` is the label).
    static let faultKinds: [FaultAction] = [
        .reject(.serviceUnavailable, timestamp: nil), .goAway(reason: "", errorCode: 0), .resetStream(errorCode: 0),
        .closeConnection, .stall(milliseconds: nil), .trickle(bytesPerChunk: 1, intervalMilliseconds: 1),
        .limitConcurrentStreams(to: 1, milliseconds: 1), .deliver(.lose), .deliver(.deliverLate(milliseconds: 0)),
        .deliver(.extensionCrash), .deliver(.extensionTimeout), .none,
    ]

    /// The index of an action's kind in `faultKinds`.
    static func faultPosition(_ action: FaultAction) -> Int {
        switch action {
        case .reject: 0
        case .goAway: 1
        case .resetStream: 2
        case .closeConnection: 3
        case .stall: 4
        case .trickle: 5
        case .limitConcurrentStreams: 6
        case .deliver(.lose): 7
        case .deliver(.deliverLate): 8
        case .deliver(.extensionCrash): 9
        case .deliver(.extensionTimeout): 10
        case .none: 11
        }
    }

    /// `DisplayOutcome.allCases.count`, computed once (`allCases` builds an array at each use).
    static let outcomeCount = DisplayOutcome.allCases.count

    /// The index of an outcome in `DisplayOutcome.allCases`' order.
    static func outcomePosition(_ outcome: DisplayOutcome) -> Int {
        switch outcome {
        case .processed: 0
        case .bestAttempt: 1
        case .originalTimeout: 2
        case .originalError: 3
        case .originalCrash: 4
        case .originalNoAlert: 5
        case .direct: 6
        }
    }
}
