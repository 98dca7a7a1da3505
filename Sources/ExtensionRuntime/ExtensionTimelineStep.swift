// APNs Sandbox — the timeline entries an extension instance reports (ExtensionResult.timeline).

/// Names of the timeline entries an instance adds to its notification's record, in the order they can occur.
public enum ExtensionTimelineStep: String, Sendable, CaseIterable {
    /// The instance waited for a free slot (``RuntimeConfiguration/maxConcurrentInstances``) or, exec, for a
    /// process launcher (``RuntimeConfiguration/launcherCount``); its budget starts after; detail: how long.
    case queued = "extension-queued"
    /// `didReceive` was delivered: kind, budget, grace, memory limit, instance id.
    case started = "extension-started"
    /// The budget came from the `apns-sandbox-extension-budget-ms` header, or the header was ignored.
    case budgetHeader = "extension-budget-header"
    case stepStarted = "extension-step-started"
    case stepFinished = "extension-step-finished"
    /// A step failed or ran out of its own time; the detail says whether the instance goes on.
    case stepFailed = "extension-step-failed"
    /// `serviceExtensionTimeWillExpire` was delivered.
    case timeWillExpire = "extension-time-will-expire"
    /// The content handler was called: the first call, which wins.
    case handlerCalled = "extension-handler-called"
    /// A later content handler call (or content after the end), ignored.
    case handlerIgnored = "extension-handler-ignored"
    case attachmentAccepted = "extension-attachment-accepted"
    case attachmentDropped = "extension-attachment-dropped"
    /// A line the exec extension wrote to stderr.
    case stderr = "extension-stderr"
    /// A `{"type":"log"}` message from the exec extension.
    case log = "extension-log"
    /// An exec stdout message of an unknown type, ignored.
    case outputIgnored = "extension-output-ignored"
    /// The extension failed: it could not start, wrote something that is not the protocol, answered with an
    /// HTTP error, or its configuration is invalid.
    case error = "extension-error"
    /// The resident memory limit was exceeded; the instance was killed.
    case memoryExceeded = "extension-memory-exceeded"
    /// The extension crashed (a signal, a simulated crash).
    case crashed = "extension-crashed"
    /// The exec process ended: exit status or signal.
    case exited = "extension-exited"
    /// The exec process group was killed at the end of the instance.
    case killed = "extension-killed"
    /// A fault rule forces the outcome (a crash or a timeout): the app's own extension does not run.
    case fault = "extension-fault"
}
