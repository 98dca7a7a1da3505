// APNs Sandbox — an instance whose outcome a fault rule forces: a crash at once, or no answer at all.
import Sandbox

/// Stands in for the app's extension when a fault rule forces the outcome (``DeliveryFault/extensionCrash``,
/// ``DeliveryFault/extensionTimeout``). The instance is a real one — budget, `timeWillExpire`, grace and the
/// fallback to the original content run as for any extension — but nothing of the app's extension is started.
struct ForcedOutcomeDriver: InstanceDriver {
    let fault: DeliveryFault
    let applied: AppliedFault

    func start(_ instance: Instance) {
        switch fault {
        case .extensionCrash:
            instance.note(.fault, "\(applied.ruleText) makes the extension crash")
            instance.fail(.crash("the extension crashed (forced by \(applied.ruleText))"))
        default:
            instance.note(.fault, "\(applied.ruleText) makes the extension never call the content handler")
        }
    }

    func timeWillExpire(_ instance: Instance) {}

    func settle(_ instance: Instance, decision: InstanceStateMachine.Decision, done: @escaping @Sendable () -> Void) {
        done()
    }
}
