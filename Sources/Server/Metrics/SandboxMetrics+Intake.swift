// APNs Sandbox — the metrics as the push intake's observer.
import APNsProtocol
import Intake

/// Refused authentications (`apns_sandbox_auth_failures_total`) and applied faults, as the intake reports them.
extension SandboxMetrics: IntakeObserver {
    func authenticationFailed(_ reason: APNsReason) {
        pushes.countAuthFailure(reason)
    }
}
