// APNs Sandbox — the budget rules of one extension instance, as a state machine that returns actions.
import Sandbox

/// The life of one instance (Apple: UNNotificationServiceExtension: `didReceive(_:withContentHandler:)`, about
/// 30 s, then `serviceExtensionTimeWillExpire()` and the original content): pure rules, no I/O and no clock.
///
/// `running` → (budget) `expiring` → (grace) decided as `original-timeout`. The first content decides
/// (`processed` while running, `best-attempt` while expiring; `original-no-alert` without alert text); an
/// error or crash before that decides `original-error` / `original-crash`. Once decided, every later event
/// is only noted. ``Instance`` feeds it events and carries out the actions.
struct InstanceStateMachine {
    enum Phase: Equatable {
        case running
        /// `timeWillExpire` was delivered; the grace period runs.
        case expiring
        /// The outcome is fixed; the extension is being stopped.
        case decided
    }

    /// How the instance ends. `content` is nil for every `original-*` outcome.
    struct Decision: Sendable {
        var outcome: DisplayOutcome
        var content: ExtensionContent?
    }

    enum Failure: Sendable, Equatable {
        case error(String)
        case crash(String)
    }

    enum Action {
        /// Nothing to do.
        case none
        /// Deliver `timeWillExpire` and start the grace period.
        case deliverTimeWillExpire
        /// The outcome is decided: stop the extension, then finish with this.
        case decide(Decision)
        /// The event came too late to matter; note it.
        case ignored(String)
    }

    private(set) var phase = Phase.running

    /// The extension called its content handler.
    mutating func contentHandlerCalled(_ content: ExtensionContent) -> Action {
        switch phase {
        case .running, .expiring:
            let inTime = phase == .running
            phase = .decided
            guard content.hasAlertText else { return .decide(Decision(outcome: .originalNoAlert, content: nil)) }
            return .decide(Decision(outcome: inTime ? .processed : .bestAttempt, content: content))
        case .decided:
            return .ignored("content handler called again; ignored (the first content wins)")
        }
    }

    /// The extension failed or died.
    mutating func failed(_ failure: Failure) -> Action {
        switch phase {
        case .running, .expiring:
            phase = .decided
            switch failure {
            case .error: return .decide(Decision(outcome: .originalError, content: nil))
            case .crash: return .decide(Decision(outcome: .originalCrash, content: nil))
            }
        case .decided:
            return .none
        }
    }

    /// The budget ran out.
    mutating func budgetElapsed() -> Action {
        guard phase == .running else { return .none }
        phase = .expiring
        return .deliverTimeWillExpire
    }

    /// The grace period after `timeWillExpire` ran out.
    mutating func graceElapsed() -> Action {
        guard phase == .expiring else { return .none }
        phase = .decided
        return .decide(Decision(outcome: .originalTimeout, content: nil))
    }
}
