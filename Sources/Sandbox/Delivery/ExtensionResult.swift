// APNs Sandbox — what a service extension run reports back: outcome, content and what happened inside.

/// The result of one service extension run (architecture.md, "Extension instances").
///
/// Besides the outcome and the content to show, it carries the events inside the instance that belong in
/// the notification's timeline: steps started, finished or failed, `timeWillExpire` delivered, a late
/// content handler call ignored, attachments accepted or dropped, lines the extension wrote to stderr.
/// The entries are stamped with the runner's clock (the same injected clock as the engine's) and are in
/// the order they happened; they all precede the record's `displayed` entry.
public struct ExtensionResult: Sendable, Equatable {
    public var outcome: DisplayOutcome
    /// What to show: the extension's content, or `original` for every `original-*` outcome.
    public var content: DisplayedContent
    /// Events inside the instance, oldest first (steps named `extension-…`).
    public var timeline: [TimelineEntry]

    public init(outcome: DisplayOutcome, content: DisplayedContent, timeline: [TimelineEntry] = []) {
        self.outcome = outcome
        self.content = content
        self.timeline = timeline
    }
}

/// A ``ServiceExtensionRunner`` that also reports what happened inside the instance.
///
/// The delivery engine prefers ``run(_:original:device:app:reporting:)`` when its runner conforms and appends
/// ``ExtensionResult/timeline`` to the record before the `displayed` entry. Conformers implement only the
/// reporting method; the plain ``ServiceExtensionRunner`` requirement forwards to it and drops the timeline.
/// The contract is the same: `completion` is called exactly once, on any thread.
public protocol ReportingServiceExtensionRunner: ServiceExtensionRunner {
    func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        reporting completion: @escaping @Sendable (ExtensionResult) -> Void)
}

extension ReportingServiceExtensionRunner {
    public func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        completion: @escaping @Sendable (DisplayOutcome, DisplayedContent) -> Void
    ) {
        run(record, original: original, device: device, app: app, reporting: { completion($0.outcome, $0.content) })
    }
}
